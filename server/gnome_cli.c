/* deskd gnome-extension: deskd's GNOME Shell extension for a session deskd
 * attaches to (--gnome-bus), written where GNOME Shell looks for a user's
 * extensions, for the version of the shell installed (or named). */
#include "server/gnome_cli.h"
#include "base/options.h"
#include "desktop/desktop.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

int gnome_cli_main(const struct options* opts)
{
	char dir[PATH_MAX], err[512];
	int major = opts->shell_version;
	bool module = false;
	if (desktop_gnome_extension_write(&major, &module, dir, sizeof(dir), err, sizeof(err)) < 0) {
		fprintf(stderr, "deskd gnome-extension: %s\n", err);
		return 1;
	}
	printf("deskd gnome-extension: wrote %s for GNOME Shell %d (%s)\n"
			"Enable it: gnome-extensions enable %s\n"
			"GNOME Shell finds a new extension when it starts: on Wayland, log out and in "
			"first.\n", dir, major, module ? "a module, 45 on" : "the 42-44 form",
			strrchr(dir, '/') + 1);
	return 0;
}
