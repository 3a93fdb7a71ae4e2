/* The session: configuration, stepper and current window of this process (preload/session.c). */
#ifndef GPROF_SESSION_H
#define GPROF_SESSION_H

/* Reads the configuration; returns 0, or -1 when libgprof is to stay inert. */
int gprof_session_init(void);
/* Process exit: finishes the window in progress and writes what is pending. */
void gprof_session_fini(void);
/* In a child after fork(): it inherits no window and writes nothing. */
void gprof_session_forked(void);

#endif
