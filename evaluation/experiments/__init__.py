"""The online experiments behind the subcommands of the same names, each a module that owns its
flags (`add_arguments`) and its command: the development suite (`suite`), River's benchmark
tracks (`tracks`), the error against the label ratio (`scarcity`) and the recovery after an
abrupt concept change (`drift`). The paper's figure 3 (`reproduce`, `run`, `compare`) needs no
module of its own: it is trials of `runs.experiment` set up by `evaluation.cli`."""
