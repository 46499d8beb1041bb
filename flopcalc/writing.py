"""Every file flopcalc writes (a `--plot` picture, the cache's small JSON files) is written by
`_replace`: a new file created beside the target with O_CREAT|O_EXCL|O_NOFOLLOW (never an
existing name, never through a link), written, then renamed over the target, so a failure leaves
the old file as it was and no reader ever sees half a file. The directory is opened once
(O_NOFOLLOW) and both steps happen inside it, so swapping the directory for a link midway
changes nothing.

What the user names (`write_output`) is held to the shell's `>` and more: a file without write
permission (0444, also for root, whom `>` would let through) is refused, as is a symbolic link
at the target (flopcalc never writes through one, and replacing the link would silently change
what it pointed to); an existing file keeps its mode (a private 0600 picture stays 0600) and,
where it can, its group; a new file gets 0666 less the umask, as `>` gives. Every refusal and
failure is one FlopcalcError naming the path and the fix.

The cache (`write_cache`) is an optimisation: a directory that is a link or belongs to another
user is not used (`cachedir.owned`), its files are 0600, and any failure is silent.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Optional

from .errors import FlopcalcError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_AT = os.open in os.supports_dir_fd and os.replace in os.supports_dir_fd and bool(_NOFOLLOW)


def _open_directory(directory: Path, own: bool) -> Optional[int]:
    """The directory opened for *at() calls (None where the platform has none); `own`: not
    through a link, and the user's own, checked on what was opened (the cache's rule)."""
    from .cachedir import owned

    if not _AT:
        if own and not owned(os.lstat(directory)):
            raise PermissionError(errno.EPERM, "not the user's own directory", str(directory))
        return None
    fd = os.open(directory, os.O_RDONLY | _DIRECTORY | (_NOFOLLOW if own else 0))
    if own and not owned(os.fstat(fd)):
        os.close(fd)
        raise PermissionError(errno.EPERM, "not the user's own directory", str(directory))
    return fd


def _replace(path: Path, data: bytes, mode: int, sync: bool, group: Optional[int] = None,
             own_directory: bool = False) -> None:
    """Write `data` to a new file beside `path` with `mode`, then rename it over `path` (see the
    module docstring). `own_directory`: see `_open_directory`. Raises OSError; the new file
    is removed on failure."""
    directory = path.parent if str(path.parent) else Path(".")
    dir_fd = _open_directory(directory, own_directory)
    at = {} if dir_fd is None else {"dir_fd": dir_fd}
    tmp = f".{path.name[:200]}.{os.urandom(6).hex()}.tmp"
    where = tmp if dir_fd is not None else str(directory / tmp)
    created = False
    try:
        fd = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, **at)
        created = True
        try:
            try:
                if group is not None:
                    os.fchown(fd, -1, group)  # the old file's group, where we belong to it
            except OSError:
                pass
            os.fchmod(fd, mode)  # after the group: changing a group clears set-id bits
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if dir_fd is None:
            os.replace(where, path)
        else:
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        if created:
            try:
                os.unlink(where, **at)
            except OSError:
                pass
        raise
    finally:
        if dir_fd is not None:
            os.close(dir_fd)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _shown(path: str) -> str:
    return path if len(path) <= 100 else f"{path[:60]}...{path[-30:]}"


def check_output(path: str, what: str) -> tuple[int, Optional[int]]:
    """The (mode, group) a file written at `path` will have, or a FlopcalcError refusing the
    target: a missing directory, a directory, FIFO or device, a link, a read-only file, a name
    too long (see the module docstring). `what` names the option (`--plot`)."""
    target = Path(path)
    shown = _shown(path)
    try:
        info: Optional[os.stat_result] = os.lstat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise FlopcalcError(_reason(what, shown, target, exc)) from None
    if info is None:
        parent = target.parent if str(target.parent) else Path(".")
        try:
            is_dir = stat.S_ISDIR(os.stat(parent).st_mode)
        except FileNotFoundError:
            is_dir = False
        except OSError as exc:
            raise FlopcalcError(_reason(what, shown, target, exc)) from None
        if not is_dir:
            raise FlopcalcError(f"{what} {shown}: no such directory {_shown(str(parent))}; "
                                "create it or choose another path")
        return 0o666 & ~_umask(), None
    if stat.S_ISLNK(info.st_mode):
        raise FlopcalcError(f"{what} {shown}: is a symbolic link; flopcalc never writes through "
                            "one: give the path it points to, or remove the link")
    if not stat.S_ISREG(info.st_mode):
        raise FlopcalcError(f"{what} {shown}: not a regular file (a directory, FIFO or device); "
                            "give a file path")
    if not info.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise FlopcalcError(f"{what} {shown}: the file is read-only; make it writable (chmod "
                            "u+w) or remove it to replace it, or choose another path")
    return stat.S_IMODE(info.st_mode) & 0o777, info.st_gid


def _reason(what: str, shown: str, target: Path, exc: OSError) -> str:
    directory = target.parent if str(target.parent) else Path(".")
    parent = _shown(str(directory))
    if exc.errno == errno.ENOENT and os.path.isdir(directory):  # /proc: no new files there
        return f"{what} {shown}: cannot create a file in {parent}; choose another directory"
    fixes = {
        errno.ENAMETOOLONG: "the name is too long; choose a shorter one",
        errno.EACCES: f"permission denied in {parent}; choose a directory you can write",
        errno.EPERM: f"permission denied in {parent}; choose a directory you can write",
        errno.EROFS: f"{parent} is on a read-only file system; choose another directory",
        errno.ENOENT: f"no such directory {parent}; create it or choose another path",
        errno.ENOTDIR: f"{parent} is not a directory; choose another path",
        errno.ELOOP: f"{parent} is a symbolic link; give the directory it points to",
        errno.EISDIR: "is a directory; give a file path",
        errno.ENOSPC: "no space left on the device; free some or choose another path",
        errno.EDQUOT: "disk quota exceeded; free some space or choose another path",
    }
    return f"{what} {shown}: " + fixes.get(exc.errno, f"cannot write it ({exc.strerror or exc})")


def write_output(path: str, data: bytes, what: str) -> None:
    """Write a file the user named (see the module docstring): checked again here, since the
    target may have changed since `check_output` refused nothing."""
    mode, group = check_output(path, what)
    try:
        _replace(Path(path), data, mode, sync=True, group=group)
    except OSError as exc:
        raise FlopcalcError(_reason(what, _shown(path), Path(path), exc)) from None


def write_cache(path: Path, data: bytes) -> None:
    """Write a cache file, 0600, creating its directory (0700) if need be; nothing at all if the
    directory is not one the cache may use, and no error: a cache that cannot be written only
    means the work is done again next time."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _replace(path, data, 0o600, sync=False, own_directory=True)
    except OSError:
        pass
