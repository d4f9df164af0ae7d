"""The review classifier: data sets and loaders, document-term features, the lecture's network, training, baseline."""
