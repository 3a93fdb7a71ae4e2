/* The session: configuration, stepper and current window of this process (preload/session.c). */
#ifndef GPROF_SESSION_H
#define GPROF_SESSION_H

/* Reads the configuration; returns 0, or -1 when libgprof is to stay inert. */
int gprof_session_init(void);
/*
 * Process exit, run for thread tid (the one that ends the process): finishes the window in
 * progress, with the step in progress only if tid marked it, and writes what is pending.
 */
void gprof_session_fini(int tid);
/* In a child after fork(): it inherits no window and writes nothing. */
void gprof_session_forked(void);

#endif
