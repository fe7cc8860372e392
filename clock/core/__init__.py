"""The pure core: numpy and scipy only; no files, no command line, no plotting."""
