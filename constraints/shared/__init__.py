"""What holds for every engine: the parallel layout, the memory arithmetic, the feature
pairs and the expert-parallel rules (`rules/`), each rule scoped where it holds."""
