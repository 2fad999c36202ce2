#pragma once

struct options;

/** deskd gnome-extension [--shell-version N]: write deskd's GNOME Shell
 *  extension into the user's data dir, in the form that shell loads. Returns
 *  the process exit code. */
int gnome_cli_main(const struct options* opts);
