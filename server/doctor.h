#pragma once

/* Health checks shared by `deskd doctor` and the doctor tool. */

#include <jansson.h>

struct options;

/** Run every check; returns {"healthy":bool,"checks":[{name,ok,detail}]}. */
json_t* doctor_run(const struct options* opts, const char* display);
/** deskd doctor: print a table, exit 0 when healthy. */
int doctor_main(const struct options* opts);
