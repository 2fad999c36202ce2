#pragma once

/* Health checks shared by `deskd doctor` and the doctor tool. */

#include <jansson.h>
#include <stdbool.h>

struct options;

/** Run every check; returns {"healthy":bool,"checks":[{name,ok,detail}]}
 *  (new reference). display: the X display to check (NULL or "" = none).
 *  serving: called inside a running server, whose own listener holds the
 *  port (the port check then reports it instead of trying to bind).
 *  Opens short-lived X connections of its own; any thread. */
json_t* doctor_run(const struct options* opts, const char* display, bool serving);
/** deskd doctor: starts the embedded display when none is given, prints a
 *  table to stdout, stops what it started; returns 0 when healthy, else 1. */
int doctor_main(const struct options* opts);
