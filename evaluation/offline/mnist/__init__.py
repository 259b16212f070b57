"""The paper's MNIST experiment (Table 1): the IDX files and the balanced split (`data`), the
offline trainer and its schedule (`trainer`), the table against the paper's rows (`table`),
and the command with the protocol any data set can run (`experiment.run_protocol`)."""
