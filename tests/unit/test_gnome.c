/* gnome/'s pure parts: the address deskd passes down (format and parse,
 * every refusal), and the extension written out for a shell (the files
 * compiled in, 0700 folders and 0600 files, its metadata naming its uuid).
 * The D-Bus and PipeWire sides run against a real GNOME Shell in
 * tests/integration/gnome.test.mjs. */
#define _GNU_SOURCE
#include "gnome/gnome.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void address_checks(void)
{
	char out[GNOME_ADDRESS_MAX];
	struct gnome_address a = { .bus = "unix:path=/run/d/bus,guid=ab12" }, b;
	TST_EQ_INT(gnome_address_format(&a, out, sizeof(out)), 0);
	TST_EQ_STR(out, "gnome:unix:path=/run/d/bus,guid=ab12");
	TST_CHECK(gnome_is_address(out) && !gnome_is_address(":1") && !gnome_is_address(NULL));
	TST_EQ_INT(gnome_address_parse(out, &b), 0);
	TST_EQ_STR(b.bus, a.bus);
	TST_CHECK(b.pipewire[0] == '\0' && b.wayland[0] == '\0');
	snprintf(a.pipewire, sizeof(a.pipewire), "/run/d/pipewire-0");
	snprintf(a.wayland, sizeof(a.wayland), "/run/d/wayland-deskd");
	TST_EQ_INT(gnome_address_format(&a, out, sizeof(out)), 0);
	TST_EQ_STR(out, "gnome:unix:path=/run/d/bus,guid=ab12?pipewire=/run/d/pipewire-0"
			"&wayland=/run/d/wayland-deskd");
	TST_EQ_INT(gnome_address_parse(out, &b), 0);
	TST_EQ_STR(b.bus, a.bus);
	TST_EQ_STR(b.pipewire, a.pipewire);
	TST_EQ_STR(b.wayland, a.wayland);
	a.pipewire[0] = '\0';
	TST_EQ_INT(gnome_address_format(&a, out, sizeof(out)), 0);
	TST_EQ_STR(out, "gnome:unix:path=/run/d/bus,guid=ab12?wayland=/run/d/wayland-deskd");
	TST_EQ_INT(gnome_address_parse(out, &b), 0);
	TST_CHECK(b.pipewire[0] == '\0');
	TST_EQ_STR(b.wayland, a.wayland);
	/* The portal route: a flag part, round trip; only "1" fits. */
	snprintf(a.portal, sizeof(a.portal), "1");
	TST_EQ_INT(gnome_address_format(&a, out, sizeof(out)), 0);
	TST_EQ_STR(out, "gnome:unix:path=/run/d/bus,guid=ab12?wayland=/run/d/wayland-deskd&portal=1");
	TST_EQ_INT(gnome_address_parse(out, &b), 0);
	TST_EQ_STR(b.portal, "1");
	TST_EQ_STR(b.wayland, a.wayland);
	TST_EQ_INT(gnome_address_parse("gnome:unix:path=/a?portal=11", &b), -ENAMETOOLONG);
	a.portal[0] = '\0';
	/* Refusals: no bus, a part with '?' or '&', too small, unknown parts. */
	struct gnome_address empty = { 0 };
	TST_EQ_INT(gnome_address_format(&empty, out, sizeof(out)), -EINVAL);
	struct gnome_address q = { .bus = "unix:path=/a?b" };
	TST_EQ_INT(gnome_address_format(&q, out, sizeof(out)), -EINVAL);
	struct gnome_address amp = { .bus = "unix:path=/a", .wayland = "/w&x" };
	TST_EQ_INT(gnome_address_format(&amp, out, sizeof(out)), -EINVAL);
	TST_EQ_INT(gnome_address_format(&a, out, 20), -ENAMETOOLONG);
	TST_EQ_INT(gnome_address_parse("gnome:", &b), -EINVAL);
	TST_EQ_INT(gnome_address_parse("gnome:?wayland=/w", &b), -EINVAL);
	TST_EQ_INT(gnome_address_parse("gnome:unix:path=/a?sway=/s", &b), -EINVAL);
	TST_EQ_INT(gnome_address_parse("gnome:unix:path=/a?wayland", &b), -EINVAL);
	TST_EQ_INT(gnome_address_parse("wayland:/s", &b), -EINVAL);
	char big[GNOME_ADDRESS_MAX + 300];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "gnome:", 6);
	TST_EQ_INT(gnome_address_parse(big, &b), -ENAMETOOLONG);
}

/* The extension file's text, or "" (buf holds size bytes). */
static const char* read_extension_file(const char* dir, const char* name, char* buf, size_t size)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/gnome-shell/extensions/" GNOME_EXTENSION_UUID "/%s", dir,
			name);
	buf[0] = '\0';
	TST_CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
	FILE* f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
	return buf;
}

static void extension_checks(void)
{
	char dir[] = "/tmp/deskd-gnometest-XXXXXX", path[256], err[256];
	static char js[16384], meta[1024];
	TST_CHECK(mkdtemp(dir) != NULL);
	TST_EQ_INT(gnome_extension_install(dir, 43, err, sizeof(err)), 0);
	struct stat st;
	snprintf(path, sizeof(path), "%s/gnome-shell/extensions/" GNOME_EXTENSION_UUID, dir);
	TST_CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 077) == 0);
	/* The metadata names the folder's uuid (GNOME Shell skips it
	 * otherwise) and the shell's version. */
	read_extension_file(dir, "metadata.json", meta, sizeof(meta));
	TST_CHECK(strstr(meta, "\"uuid\": \"" GNOME_EXTENSION_UUID "\"") != NULL);
	TST_CHECK(strstr(meta, "\"shell-version\": [\"43\"]") != NULL);
	/* 42-44: the imports.gi form, the service inside it. */
	read_extension_file(dir, "extension.js", js, sizeof(js));
	TST_CHECK(strstr(js, "imports.gi") && strstr(js, "function init()"));
	TST_CHECK(strstr(js, "class Service") && strstr(js, "function startService"));
	TST_CHECK(!strstr(js, "@service") && !strstr(js, "export ") && !strstr(js, "import "));
	/* 45 on: a module, written over the other form. */
	TST_EQ_INT(gnome_extension_install(dir, 47, err, sizeof(err)), 0);
	read_extension_file(dir, "metadata.json", meta, sizeof(meta));
	TST_CHECK(strstr(meta, "\"shell-version\": [\"47\"]") != NULL);
	read_extension_file(dir, "extension.js", js, sizeof(js));
	TST_CHECK(strstr(js, "export default class") && strstr(js, "import Gio from 'gi://Gio'"));
	TST_CHECK(strstr(js, "class Service") && !strstr(js, "imports.") && !strstr(js, "@service"));
	/* Older than the extension: said, nothing written. */
	TST_EQ_INT(gnome_extension_install(dir, 41, err, sizeof(err)), -ENOTSUP);
	TST_CHECK(strstr(err, "GNOME Shell 41") != NULL);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	TST_EQ_INT(system(cmd), 0);
	/* A data dir that cannot be made says where. */
	TST_CHECK(gnome_extension_install("/proc/deskd-no", 43, err, sizeof(err)) < 0);
	TST_CHECK(strstr(err, "/proc/deskd-no") != NULL);
	/* The version from a program's own words, and a program that is not a shell. */
	int major = gnome_shell_major("/usr/bin/gnome-shell", err, sizeof(err));
	if (access("/usr/bin/gnome-shell", X_OK) == 0)
		TST_CHECK(major >= 42);
	TST_CHECK(gnome_shell_major("/bin/true", err, sizeof(err)) == -EPROTO);
	TST_CHECK(gnome_shell_major("/nonexistent/gnome-shell", err, sizeof(err)) < 0);
	TST_CHECK(strstr(err, "/nonexistent/gnome-shell") != NULL);
}

int main(void)
{
	address_checks();
	extension_checks();
	TST_END();
}
