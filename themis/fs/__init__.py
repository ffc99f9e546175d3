"""The FUSE side of Themis: the pyfuse3 passthrough, its inode table and its I/O path."""
