"""The paper's offline experiments, trained in passes over a fixed data set rather than on a
stream: MNIST with 100 labels (`offline.mnist`, Table 1) and 20 NewsGroups
(`offline.newsgroups`), which runs MNIST's protocol over the posts."""
