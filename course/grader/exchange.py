"""`nbgrader collect`, trusting only what no student can forge (round 5 of the attacks).

On a shared exchange every student may write into `inbound/` (mode 733), and a
submission's folder name says whose it is and when it was made
(`<student>+<assignment>+<timestamp>+<random>`). nbgrader's collect only warns when the
folder's owner is not the student it names, and believes the timestamp. So:

- a folder owned by another account than the student it names is skipped, with an error
  in the log (one student could otherwise replace a classmate's submission); a folder of
  the account that collects is taken (a self-learner's or the demo's private exchange,
  where the instructor's own account submits);
- a submission is dated no earlier than the last change of its folder or of anything in
  it (their ctime, which no student can set back): a submission made after the due date
  but named before it, or rewritten in place after it, is dated when it was last changed;
- the collected `timestamp.txt` (which autograde dates the submission by) is always written
  by the collector from the date it checked, never copied from the student's folder (round
  7: a folder named truthfully held its own timestamp.txt saying 2020), with a warning when
  the student's said otherwise;
- a folder that holds any file or folder owned by another account than the folder itself
  is refused whole, with an error naming it (round 8: nbgrader's submit leaves the folder
  writable to all, and a classmate who learnt its name replaced the notebook in it), and
  the student's previous submission, if any, is collected instead;
- collected files keep their read and write bits only: no setuid, setgid or execute bit;
- an inbound entry that is a link, is not a folder, holds anything but regular files and
  folders (a link, a fifo, a device), or whose name does not parse, is skipped with an
  error naming it, and the others are collected (round 6: one such entry stopped the whole
  collect, or had the instructor's own files copied in as a submission); the copy itself
  never follows a link and copies only regular files; a folder nested more than MAX_DEPTH
  levels deep or holding more than MAX_ENTRIES entries is refused the same way, and every
  walk of a submission keeps a stack of its own (round 7: 1,100 nested folders made the
  recursive walk raise RecursionError and stopped the collect of the whole class);
- what the log says of a student's folder name is escaped (course.grader.logsafe).
"""

from __future__ import annotations

import datetime
import os
import secrets
import shutil
import stat
import sys

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.submit import ExchangeSubmit
from nbgrader.utils import parse_utc

from course.grader.files import MAX_SUBMISSION_BYTES

if sys.platform != "win32":
    import pwd
else:  # no owners to compare there
    pwd = None


def owner_of(path: str) -> str:
    uid = os.lstat(path).st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


# A submission's files are copied within this of its name's time (nbgrader submit names the
# folder, copies, then writes timestamp.txt); a change later than that is a later edit.
COPY_SLACK = datetime.timedelta(seconds=2)


# A submission is a notebook or a few beside their data: a folder nested deeper than this, or
# holding more entries than this, is refused (round 7: 1,100 nested folders made os.walk's
# recursion raise RecursionError and stopped the collect of the whole class).
MAX_DEPTH = 32
MAX_ENTRIES = 10_000


class Irregular(Exception):
    """Why an inbound entry is not a plain submission."""


def entries(path: str):
    """(path relative to `path`, lstat) of everything under the folder `path`, walked with
    a stack of its own (no recursion), following no link; raises Irregular past MAX_DEPTH
    levels, past MAX_ENTRIES entries, or at a folder that cannot be listed."""
    stack, count = [("", 0)], 0
    while stack:
        rel, depth = stack.pop()
        try:
            with os.scandir(os.path.join(path, rel) if rel else path) as listing:
                found = [(item.name, item.stat(follow_symlinks=False)) for item in listing]
        except OSError as error:
            raise Irregular(
                f"holds a folder that cannot be read ({type(error).__name__}): {rel!r}"
            ) from None
        for name, status in found:
            count += 1
            if count > MAX_ENTRIES:
                raise Irregular(f"holds more than {MAX_ENTRIES} files and folders")
            sub = os.path.join(rel, name)
            if stat.S_ISDIR(status.st_mode):
                if depth + 1 > MAX_DEPTH:
                    raise Irregular(f"holds folders nested more than {MAX_DEPTH} deep")
                stack.append((sub, depth + 1))
            yield sub, status


def irregular_entry(path: str) -> str | None:
    """Why an inbound entry is not a plain submission (None if it is): it is a link or not
    a folder, holds something other than regular files and folders, holds a file or folder
    of another account than the folder's own (a classmate's, put into a folder that
    nbgrader's submit leaves writable to all), or is nested too deep or holds too much to
    walk (MAX_DEPTH, MAX_ENTRIES)."""
    top = os.lstat(path)
    if not stat.S_ISDIR(top.st_mode):
        return "a link" if os.path.islink(path) else "not a folder"
    weight = 0
    try:
        for rel, status in entries(path):
            if not (stat.S_ISREG(status.st_mode) or stat.S_ISDIR(status.st_mode)):
                kind = "a link" if stat.S_ISLNK(status.st_mode) else "a special file"
                return f"holds {kind}: {rel!r}"
            if status.st_uid != top.st_uid:
                return f"holds {rel!r}, owned by {owner_of(os.path.join(path, rel))}"
            if stat.S_ISREG(status.st_mode):
                # Apparent sizes: a sparse file weighs nothing in the student's home and
                # its full size once copied into the collector's (round 8 on the hub).
                weight += status.st_size
                if weight > MAX_SUBMISSION_BYTES:
                    return f"its files weigh more than {MAX_SUBMISSION_BYTES // 2**20} MB in all"
    except Irregular as why:
        return str(why)
    return None


def last_change(path: str) -> datetime.datetime:
    """The latest ctime of the folder and everything under it, without following links
    (raises Irregular where `entries` does)."""
    latest = os.lstat(path).st_ctime
    for _, status in entries(path):
        latest = max(latest, status.st_ctime)
    return datetime.datetime.fromtimestamp(latest, datetime.UTC).replace(tzinfo=None)


def open_folder(top: str, rel: str) -> int:
    """A descriptor of the folder `rel` under `top`, opened one name at a time without
    following a link at any of them (a folder swapped for a link meanwhile fails)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(top, flags)
    for name in [part for part in rel.split(os.sep) if part]:
        try:
            inner = os.open(name, flags, dir_fd=fd)
        finally:
            os.close(fd)
        fd = inner
    return fd


STAMP = "timestamp.txt"
SECRET = "submission_secret.txt"  # names the released feedback (nbgrader's notebook_hash)


def read_stamp(folder: str) -> str | None:
    """The start (200 bytes) of a folder's timestamp.txt if it is a regular file (None if not),
    opened without following a link or waiting on a pipe."""
    try:
        fd = os.open(os.path.join(folder, STAMP), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, 200).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)


def _parsed(stamp: str) -> datetime.datetime | None:
    try:
        return parse_utc(stamp)
    except Exception:  # dateutil's ParserError, OverflowError, a bad zone...
        return None


class OwnerCheckedCollect(ExchangeCollect):
    def _path_to_record(self, path):
        """Each folder's record, made once (init_src reads them twice)."""
        cache = self.__dict__.setdefault("_records", {})
        if path not in cache:
            cache[path] = self._make_record(path)
        return cache[path]

    def _make_record(self, path):
        try:
            record = super()._path_to_record(path)
        except Exception as error:  # a name that does not parse (dateutil's, or self.fail)
            return self._refused(path, f"its name does not parse ({type(error).__name__})")
        record["owner"] = owner_of(path) if pwd is not None else record["username"]
        why = irregular_entry(path)
        if why:
            record.update(refused=why)
            return record
        try:
            changed = last_change(path)
        except (Irregular, OSError) as error:  # changed since irregular_entry looked
            record.update(refused=str(error) if isinstance(error, Irregular) else "unreadable")
            return record
        claimed = record["timestamp"]
        if claimed.tzinfo is not None:
            changed = changed.replace(tzinfo=datetime.UTC).astimezone(claimed.tzinfo)
            now = datetime.datetime.now(datetime.UTC).astimezone(claimed.tzinfo)
        else:
            now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        try:
            believable = changed <= claimed + COPY_SLACK and claimed <= now + COPY_SLACK
        except OverflowError:  # a name dated at the end of the calendar (round 8, hub)
            believable = False
        if not believable:
            self.log.warning(
                "%r is dated %s but was last changed at %s: dated by the change",
                path,
                claimed,
                changed,
            )
            record["timestamp"], record["redated"] = changed, True
        return record

    def _refused(self, path, why):
        name = os.path.basename(path)
        return {
            "username": name.split("+", 1)[0],
            "filename": name,
            "timestamp": datetime.datetime.min,
            "owner": None,
            "refused": why,
        }

    def _forged(self, record) -> bool:
        if record.get("refused"):
            return True
        me = pwd.getpwuid(os.geteuid()).pw_name if pwd is not None else None
        return record["owner"] not in (record["username"], me)

    def _sort_by_timestamp(self, records):
        # Each student's latest submission of their own: refused and forged folders last
        # (dropped below); a refused name's date is unknown, so sort on it only among the good.
        good = super()._sort_by_timestamp([r for r in records if not self._forged(r)])
        return good + [r for r in records if self._forged(r)]

    def init_src(self):
        super().init_src()
        pattern = f"*+{self.coursedir.assignment_id}+*"
        for record in self._all_records(pattern):
            if record.get("refused"):
                self.log.error("%r: %s: not collected", record["filename"], record["refused"])
            elif self._forged(record):
                self.log.error(
                    "%r claims to be submitted by %r but is owned by %r: not collected",
                    record["filename"],
                    record["username"],
                    record["owner"],
                )
        self.src_records = [r for r in self.src_records if not self._forged(r)]

    def _all_records(self, pattern):
        import glob

        student = self.coursedir.student_id or "*"
        found = glob.glob(os.path.join(self.inbound_path, pattern.replace("*", student, 1)))
        return [self._path_to_record(path) for path in found]

    def do_copy(self, src, dest, log=None):
        """nbgrader's copy, walked with a stack of its own (no recursion, MAX_DEPTH levels),
        following no link and copying only regular files and folders (whatever appeared
        since the folder was checked is left out, with an error); then timestamp.txt is
        written from the date the collector checked, never copied from the student's."""
        from nbgrader.exchange.default.exchange import ignore_patterns

        nbgraders = ignore_patterns(
            exclude=self.coursedir.ignore,
            include=self.coursedir.include,
            max_file_size=self.coursedir.max_file_size,
            log=self.log,
        )
        os.makedirs(dest)
        self._uid = os.lstat(src).st_uid  # checked by irregular_entry: the student's
        stack = self._stack = [("", 0)]
        while stack:
            rel, depth = stack.pop()
            folder = os.path.join(src, rel)
            try:
                here = open_folder(src, rel)
            except OSError as error:
                self.log.error("%r in %r cannot be read (%s): left out", rel, src, error)
                continue
            try:
                names = sorted(os.listdir(here))
                left = set(nbgraders(folder, names))  # sizes: a name may vanish meanwhile
                left |= {STAMP} if not rel else set()
                for name in names:
                    if name not in left:
                        self._copy_entry(here, name, os.path.join(rel, name), depth, src, dest)
            except OSError as error:
                self.log.error("%r in %r cannot be read (%s): left out", rel, src, error)
            finally:
                os.close(here)
        record = self._path_to_record(src)
        theirs = read_stamp(src)
        ours = record["timestamp"].strftime("%Y-%m-%d %H:%M:%S.%f UTC")
        if theirs is not None and _parsed(theirs) != record["timestamp"]:
            self.log.warning(
                "%r: its own timestamp.txt says %r; dated %s, as checked", src, theirs[:60], ours
            )
        with open(os.path.join(dest, STAMP), "w") as out:
            out.write(ours)
        # nbgrader's release_feedback reads every collected submission's secret and stops
        # for the whole class at one without it (round 8: a folder made by hand, not by
        # nbgrader's submit): such a submission gets a secret nobody knows, so its
        # feedback is released and only its author cannot fetch it.
        secret = os.path.join(dest, SECRET)
        if not os.path.isfile(secret):
            self.log.warning("%r has no %s (not made by nbgrader submit): one is made", src, SECRET)
            with open(secret, "w") as out:
                out.write(secrets.token_hex(64))

    def _copy_entry(self, here, name, rel, depth, src, dest):
        """Copy the entry `name` of the open folder `here` (at `rel` in `src`) to `dest`,
        a folder by pushing it on the walk's stack, a regular file at once; anything else
        is left out with an error."""
        target = os.path.join(dest, rel)
        try:
            status = os.stat(name, dir_fd=here, follow_symlinks=False)
            mode = status.st_mode
            if status.st_uid != self._uid:  # put there since the folder was checked
                self.log.error("%r in %r is another account's: left out", rel, src)
            elif stat.S_ISDIR(mode) and depth + 1 > MAX_DEPTH:
                self.log.error("%r in %r is nested too deep: left out", rel, src)
            elif stat.S_ISDIR(mode):
                os.mkdir(target)
                self._stack.append((rel, depth + 1))
            elif not (stat.S_ISREG(mode) and self._copy_file(here, name, target, self._uid)):
                self.log.error("%r in %r is not a regular file of its own: left out", rel, src)
        except OSError as error:
            self.log.error("%r in %r cannot be copied (%s): left out", rel, src, error)

    @staticmethod
    def _copy_file(here: int, name: str, target: str, uid: int) -> bool:
        """Copy one regular file of the open folder `here`, opened without following a link
        or waiting on a pipe; False (nothing copied) if it is no longer a regular file
        owned by `uid`."""
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=here)
        status = os.fstat(fd)
        # fdopen would refuse a folder: checked first
        if not stat.S_ISREG(status.st_mode) or status.st_uid != uid:
            os.close(fd)
            return False
        with os.fdopen(fd, "rb") as inp:
            with open(target, "wb") as out:
                shutil.copyfileobj(inp, out)
        # Read and write bits only: no setuid, setgid, sticky or execute bit is collected (a
        # student's setuid program would otherwise become one of the collecting account).
        os.chmod(target, stat.S_IMODE(status.st_mode) & 0o666 | stat.S_IRUSR | stat.S_IWUSR)
        os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns))
        return True


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's submit, then the submission closed to classmates (round 8).

    nbgrader leaves the submission's folder writable to all (0777) and its files readable
    to all: a classmate who learns the folder's name could read it (its
    submission_secret.txt names the feedback) or put files in it. On the class's hub the
    inbound folder is setgid to the instructors' group (hub/install, hub/add-user), so the
    folder and what nbgrader copies into it carry that group: those become 0750 and 0640,
    the instructors' group reads them to collect and nobody else enters the folder. What
    carries the student's own group (nbgrader writes timestamp.txt and
    submission_secret.txt after the copy has reset the folder's setgid bit) stays 0644,
    inside that closed folder. Elsewhere (no such group) everything is as nbgrader makes
    it inside: folders 0755, files 0644.
    """

    def copy_files(self):
        super().copy_files()
        dest = os.path.join(self.inbound_path, self.assignment_filename)
        inbound = os.stat(self.inbound_path)
        group = inbound.st_gid if inbound.st_mode & stat.S_ISGID else None
        if group in (os.getegid(), *os.getgroups()):
            group = None  # a private exchange, the student's own group: nothing to close
        folders = []
        for folder, _, files in os.walk(dest):
            folders.append(folder)
            for name in files:
                path = os.path.join(folder, name)
                os.chmod(path, 0o640 if os.stat(path).st_gid == group else 0o644)
        for folder in reversed(folders):
            os.chmod(folder, 0o750 if os.stat(folder).st_gid == group else 0o755)
