"""The run machinery every experiment shares: the names of the streams and models and the
configs (`registry`), trials and their result files (`experiment`, `files`), the figures drawn
from those files alone (`plots`), worker pools that Ctrl-C stops (`workers`), progress bars
(`progress`), the kernels compiled before the workers start (`warmup`), the command line's
argument types (`arguments`) and MOA's learners as peers (`moa_peers`)."""
