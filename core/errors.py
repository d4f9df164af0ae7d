"""The one exception type for problems a user can cause and fix."""


class DashboardError(Exception):
    """Bad input or an unusable machine state, with a message that says what to do.

    Pages show it with `st.error`; the CLI prints it on one line and exits 2.
    Anything else that escapes is a bug in this project, not the user's fault.
    """
