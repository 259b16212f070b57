"""The paper's 20 NewsGroups experiment: the user's copy of the posts and their term vectors
(`data`), and the command that runs MNIST's protocol over them (`experiment`)."""
