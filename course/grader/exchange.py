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
  but named before it, or rewritten in place after it, is dated when it was last changed,
  and its `timestamp.txt` says so;
- an inbound entry that is a link, is not a folder, holds anything but regular files and
  folders (a link, a fifo, a device), or whose name does not parse, is skipped with an
  error naming it, and the others are collected (round 6: one such entry stopped the whole
  collect, or had the instructor's own files copied in as a submission); the copy itself
  never follows a link and copies only regular files;
- what the log says of a student's folder name is escaped (course.grader.logsafe).
"""

from __future__ import annotations

import datetime
import os
import shutil
import stat
import sys

from nbgrader.exchange.default.collect import ExchangeCollect

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


def irregular_entry(path: str) -> str | None:
    """Why an inbound entry is not a plain submission (None if it is): it is a link or not
    a folder, or holds something other than regular files and folders."""
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        return "a link" if os.path.islink(path) else "not a folder"
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            mode = os.lstat(os.path.join(folder, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = "a link" if stat.S_ISLNK(mode) else "a special file"
                return f"holds {kind}: {os.path.relpath(os.path.join(folder, name), path)!r}"
    return None


def last_change(path: str) -> datetime.datetime:
    """The latest ctime of the folder and everything under it, without following links."""
    latest = os.lstat(path).st_ctime
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            latest = max(latest, os.lstat(os.path.join(folder, name)).st_ctime)
    return datetime.datetime.fromtimestamp(latest, datetime.UTC).replace(tzinfo=None)


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
        claimed, changed = record["timestamp"], last_change(path)
        if claimed.tzinfo is not None:
            changed = changed.replace(tzinfo=datetime.UTC).astimezone(claimed.tzinfo)
        if changed > claimed + COPY_SLACK:
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
        """nbgrader's copy, following no link and copying only regular files and folders
        (whatever appeared since the folder was checked is left out, with an error)."""
        from nbgrader.exchange.default.exchange import ignore_patterns

        nbgraders = ignore_patterns(
            exclude=self.coursedir.ignore,
            include=self.coursedir.include,
            max_file_size=self.coursedir.max_file_size,
            log=self.log,
        )

        def ignore(folder, names):
            left = set(nbgraders(folder, names))
            for name in names:
                mode = os.lstat(os.path.join(folder, name)).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    self.log.error("%r in %r is not a regular file: left out", name, src)
                    left.add(name)
            return left

        shutil.copytree(src, dest, symlinks=True, ignore=ignore)
        for folder, dirs, files in os.walk(dest):  # a link made between listing and copy
            for name in dirs + files:
                if os.path.islink(os.path.join(folder, name)):
                    os.unlink(os.path.join(folder, name))

    def copy_files(self):
        super().copy_files()
        for record in self.src_records:
            if record.get("redated"):
                dest = self.coursedir.format_path(
                    self.coursedir.submitted_directory,
                    record["username"],
                    self.coursedir.assignment_id,
                )
                stamp = os.path.join(dest, "timestamp.txt")
                with open(stamp, "w") as out:
                    out.write(record["timestamp"].strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
