# The student set-up on the class's hub: nbgrader's assignment list and Validate only.
# (Students never see the course directory, so nothing is read from its nbgrader_config.py.)
import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "everything-leaks"
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
# Validate fails on every cell that raises or writes to stderr, as with `make lab` (the
# course's nbgrader_config.py): the hidden checks are hidden, so a "check it" cell's
# failure on stderr is all it has to fail on.
c.Validator.validate_all = True
# Its kernel's own log says errors only, as with `make lab`: no "Kernel is running over TCP
# without encryption" warning under every Validate.
c.Validator.Execute.extra_arguments = ["--IPKernelApp.log_level=ERROR"]
# A submission is closed to classmates once submitted (course/grader/exchange.py).
c.ExchangeFactory.submit = "course.grader.exchange.PrivateSubmit"
