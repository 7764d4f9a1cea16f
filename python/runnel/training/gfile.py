"""tf.gfile: TF 1.x's file API over local files (os and shutil). Failures
raise tf.errors (NotFoundError, AlreadyExistsError, ...) as TF's do.
GFile opened with "r"/"w" reads and writes str, with "rb"/"wb" bytes."""

import errno as _errno
import glob as _glob
import os as _os
import shutil as _shutil

from runnel.framework import errors as _errors

_ERRORS = {
    _errno.ENOENT: _errors.NotFoundError,
    _errno.ENOTDIR: _errors.FailedPreconditionError,
    _errno.EEXIST: _errors.AlreadyExistsError,
    _errno.EACCES: _errors.PermissionDeniedError,
    _errno.EPERM: _errors.PermissionDeniedError,
    _errno.EISDIR: _errors.FailedPreconditionError,
    _errno.ENOTEMPTY: _errors.FailedPreconditionError,
}


def _raise(e, path):
    cls = _ERRORS.get(e.errno, _errors.UnknownError)
    raise cls(None, None, "%s; %s" % (path, e.strerror or e)) from None


def _path(p):
    return _os.fsdecode(p) if isinstance(p, bytes) else str(p)


class GFile:
    """A file (tf.gfile.GFile / tf.gfile.Open): read, readline, readlines,
    write, seek, tell, size, flush, close, iteration, context manager."""

    def __init__(self, name, mode="r"):
        self._name = _path(name)
        self._mode = mode
        self._binary = "b" in mode
        self._file = None
        if "r" in mode and not _os.path.exists(self._name):
            raise _errors.NotFoundError(None, None, "%s; No such file or directory"
                                        % self._name)

    @property
    def name(self):
        return self._name

    @property
    def mode(self):
        return self._mode

    def _f(self):
        if self._file is None:
            mode = self._mode if self._binary else self._mode.replace("t", "") + "b"
            try:
                self._file = open(self._name, mode)
            except OSError as e:
                _raise(e, self._name)
        return self._file

    def _out(self, data):
        return data if self._binary else data.decode("utf-8")

    def size(self):
        return Stat(self._name).length

    def read(self, n=-1):
        """Reads `n` bytes (all the rest if n is -1)."""
        return self._out(self._f().read(-1 if n is None else n))

    def readline(self):
        return self._out(self._f().readline())

    def readlines(self):
        return [self._out(line) for line in self._f().readlines()]

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def write(self, file_content):
        if isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        self._f().write(file_content)

    def seek(self, offset=None, whence=0, position=None):
        if position is not None:
            offset = position
        self._f().seek(offset, whence)

    def tell(self):
        return self._f().tell()

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def seekable(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


Open = GFile
FastGFile = GFile


class FileStatistics:
    """tf.gfile.Stat's result: length (bytes), mtime_nsec, is_directory."""

    def __init__(self, length=0, mtime_nsec=0, is_directory=False):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory


def Exists(filename):
    return _os.path.exists(_path(filename))


def IsDirectory(dirname):
    return _os.path.isdir(_path(dirname))


def MkDir(dirname):
    """Creates a directory; its parent must exist (AlreadyExistsError if it
    exists)."""
    try:
        _os.mkdir(_path(dirname))
    except OSError as e:
        _raise(e, dirname)


def MakeDirs(dirname):
    """Creates a directory and its missing parents; no error if it exists."""
    try:
        _os.makedirs(_path(dirname), exist_ok=True)
    except OSError as e:
        _raise(e, dirname)


def ListDirectory(dirname):
    """The names (not paths) of the entries of a directory."""
    dirname = _path(dirname)
    if not _os.path.isdir(dirname):
        raise _errors.NotFoundError(None, None, "Could not find directory %s" % dirname)
    return _os.listdir(dirname)


def Glob(filename):
    """The paths that match a glob pattern."""
    return _glob.glob(_path(filename))


def Remove(filename):
    try:
        _os.remove(_path(filename))
    except OSError as e:
        _raise(e, filename)


def DeleteRecursively(dirname):
    dirname = _path(dirname)
    if not _os.path.exists(dirname):
        raise _errors.NotFoundError(None, None, "%s; No such file or directory" % dirname)
    try:
        if _os.path.isdir(dirname):
            _shutil.rmtree(dirname)
        else:
            _os.remove(dirname)
    except OSError as e:
        _raise(e, dirname)


def Rename(oldname, newname, overwrite=False):
    oldname, newname = _path(oldname), _path(newname)
    if not overwrite and _os.path.exists(newname):
        raise _errors.AlreadyExistsError(None, None, "file already exists: %s" % newname)
    try:
        _os.replace(oldname, newname)
    except OSError as e:
        _raise(e, oldname)


def Copy(oldpath, newpath, overwrite=False):
    oldpath, newpath = _path(oldpath), _path(newpath)
    if not overwrite and _os.path.exists(newpath):
        raise _errors.AlreadyExistsError(None, None, "file already exists: %s" % newpath)
    try:
        _shutil.copyfile(oldpath, newpath)
    except OSError as e:
        _raise(e, oldpath)


def Stat(filename):
    filename = _path(filename)
    try:
        st = _os.stat(filename)
    except OSError as e:
        _raise(e, filename)
    return FileStatistics(length=st.st_size, mtime_nsec=st.st_mtime_ns,
                          is_directory=_os.path.isdir(filename))


def Walk(top, in_order=True):
    """Yields (dirname, subdirectory names, file names) for `top` and each
    directory below it (parents first when `in_order`)."""
    top = _path(top)
    if not _os.path.isdir(top):
        return
    for entry in _os.walk(top, topdown=in_order):
        yield entry
