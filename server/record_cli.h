#pragma once

struct options;

/** deskd record --window ID --out FILE [--fps N]: record until SIGINT/SIGTERM,
 *  then publish. Returns the process exit code. */
int record_cli_main(const struct options* opts);
