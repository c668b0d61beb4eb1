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
  but named before it is dated when it was made, and its `timestamp.txt` says so.
"""

from __future__ import annotations

import datetime
import os
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


def last_change(path: str) -> datetime.datetime:
    """The latest ctime of the folder and everything under it, without following links."""
    latest = os.lstat(path).st_ctime
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            latest = max(latest, os.lstat(os.path.join(folder, name)).st_ctime)
    return datetime.datetime.fromtimestamp(latest, datetime.UTC).replace(tzinfo=None)


class OwnerCheckedCollect(ExchangeCollect):
    def _path_to_record(self, path):
        record = super()._path_to_record(path)
        record["owner"] = owner_of(path) if pwd is not None else record["username"]
        claimed, changed = record["timestamp"], last_change(path)
        if claimed.tzinfo is not None:
            changed = changed.replace(tzinfo=datetime.UTC).astimezone(claimed.tzinfo)
        if changed > claimed + datetime.timedelta(seconds=120):  # beyond a slow copy
            self.log.warning(
                "%s is dated %s but was last changed at %s: dated by the change",
                path,
                claimed,
                changed,
            )
            record["timestamp"], record["redated"] = changed, True
        return record

    def _forged(self, record) -> bool:
        me = pwd.getpwuid(os.geteuid()).pw_name if pwd is not None else None
        return record["owner"] not in (record["username"], me)

    def _sort_by_timestamp(self, records):
        # Each student's latest submission of their own: forged folders last, dropped below.
        ordered = super()._sort_by_timestamp(records)
        return [r for r in ordered if not self._forged(r)] + [r for r in ordered if self._forged(r)]

    def init_src(self):
        super().init_src()
        for record in [r for r in self.src_records if self._forged(r)]:
            self.log.error(
                "%s claims to be submitted by %s but is owned by %s: not collected",
                record["filename"],
                record["username"],
                record["owner"],
            )
        self.src_records = [r for r in self.src_records if not self._forged(r)]

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
