"""Symlink made, kept looked up, removed, then a file with (maybe) its inode number, all through the mount."""
import os, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3])); sys.path.insert(0, "/work/main/tests/themis")
from tests.themis.fusehelp import start_themis
root = Path(tempfile.mkdtemp(prefix="reuse-", dir="/tmp")); root.chmod(0o755)
m = start_themis(root)
try:
    mnt = m.mnt; bad = 0; same = 0
    for i in range(3000):
        os.symlink("nowhere", mnt / "x")
        fd = os.open(mnt / "x", os.O_PATH | os.O_NOFOLLOW)  # kernel keeps the inode
        ino_link = os.lstat(m.backing / "x").st_ino
        os.unlink(mnt / "x")
        with open(mnt / "x", "w+b") as f:
            pass
        if os.lstat(m.backing / "x").st_ino == ino_link:
            same += 1
        try:
            with open(mnt / "x", "rb"):
                pass
        except OSError as e:
            bad += 1
        os.close(fd)
        os.unlink(mnt / "x")
    print(f"reused numbers {same}, failed reopens {bad} of 3000")
finally:
    m.stop()
