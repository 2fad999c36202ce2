/* Core tools: status and doctor. Both answer without a display. */
#include "server/status.h"
#include "tools/tools.h"
#include "desktop/desktop.h"
#include "a11y/a11y.h"
#include "server/doctor.h"
#include "base/log.h"
#include "server/mcp/mcp.h"
#include "base/options.h"
#include "base/real.h"
#include "record/record.h"

#include <libwebsockets.h>
#include <microhttpd.h>
#include <png.h>
#include <zlib.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef DESKD_VERSION
#define DESKD_VERSION "0.0.0"
#endif

/* Seconds since this process started, from /proc (no state to keep). */
static double process_uptime(void)
{
	char buf[1024];
	FILE* f = fopen("/proc/self/stat", "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Field 22 (starttime) counts from the ')' that ends field 2. */
	char* p = strrchr(buf, ')');
	if (!p)
		return 0;
	unsigned long long start = 0;
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field != 22 || sscanf(p, "%llu", &start) != 1)
		return 0;
	f = fopen("/proc/uptime", "r");
	if (!f)
		return 0;
	double up = 0;
	if (fscanf(f, "%lf", &up) != 1)
		up = 0;
	fclose(f);
	long hz = sysconf(_SC_CLK_TCK);
	double u = up - (double)start / (double)(hz > 0 ? hz : 100);
	return u > 0 ? u : 0;
}

static json_t* versions(void)
{
	json_t* v = json_object();
	json_object_set_new(v, "deskd", json_string(DESKD_VERSION));
	json_object_set_new(v, "libmicrohttpd", json_string(MHD_get_version()));
	json_object_set_new(v, "libwebsockets", json_string(lws_get_library_version()));
	json_object_set_new(v, "jansson", json_string(jansson_version_str()));
	struct record_version lav[RECORD_VERSIONS];
	record_versions(lav);
	for (int i = 0; i < RECORD_VERSIONS; i++)
		json_object_set_new(v, lav[i].library, json_string(lav[i].version));
	json_object_set_new(v, "libpng", json_string(png_get_libpng_ver(NULL)));
	json_object_set_new(v, "zlib", json_string(zlibVersion()));
	char server[128];
	desktop_server_info(server, sizeof(server));
	if (*server)
		json_object_set_new(v, desktop_is_wayland() || desktop_is_gnome() ? "compositor"
				: "x_server",
				json_string(server));
	return v;
}

/* The launch tool's programs: [{pid, program, path, running, started,
 * exit_code?, signal?}], running first. */
static json_t* launched_json(void)
{
	json_t* arr = json_array();
	struct desktop_launched* list;
	size_t n;
	if (!arr || desktop_launched_list(&list, &n) < 0)
		return arr;
	for (size_t i = 0; i < n; i++) {
		const struct desktop_launched* l = &list[i];
		json_t* o = json_pack("{s:I, s:s, s:s, s:b, s:I}", "pid", (json_int_t)l->pid,
				"program", l->program, "path", l->path, "running", l->running,
				"started", (json_int_t)l->started);
		if (o && !l->running) {
			json_object_set_new(o, "exit_code", json_integer(l->exit_code));
			if (l->signal)
				json_object_set_new(o, "signal", json_string(strsignal(l->signal)));
		}
		json_array_append_new(arr, o);
	}
	free(list);
	return arr;
}

static int status_handler(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	int w = 0, h = 0;
	desktop_screen_size(&w, &h);
	json_t* recordings = tools_record_list();
	if (!recordings)
		recordings = json_array();
	json_t* s = json_pack("{s:{s:s, s:s, s:I, s:f}, s:{s:s, s:s, s:b, s:b, s:i, s:i, s:i},"
			" s:i, s:o, s:o, s:i, s:o}",
			"server",
			"name", "deskd",
			"version", DESKD_VERSION,
			"pid", (json_int_t)getpid(),
			"uptime_seconds", real_round(process_uptime(), REAL_TIME),
			"display",
			"name", desktop_display_name(),
			"backend", desktop_backend(),
			"available", desktop_available(),
			"embedded", desktop_is_embedded(),
			"width", w,
			"height", h,
			"disconnects", (int)desktop_disconnects(),
			"sessions", mcp_session_count(),
			"recordings", recordings,
			"launched", launched_json(),
			"tools", (int)tools_count(),
			"versions", versions());
	if (!s)
		return -ENOMEM;
	struct desktop_buses b;
	desktop_buses(&b);
	struct a11y_status st;
	a11y_status(&st, 500);
	json_t* a11y = json_pack("{s:b, s:b, s:s, s:s, s:b, s:i}", "available", st.registry,
			"embedded_bus", b.embedded && b.pid > 0, "session_bus", b.session,
			"atspi_bus", st.bus_address, "enabled", st.enabled, "apps", st.apps);
	if (!st.registry)
		json_object_set_new(a11y, "reason", json_string(b.reason[0] ? b.reason : st.reason));
	json_object_set_new(s, "accessibility", a11y);
	char why[256];
	if (desktop_unavailable_reason(why, sizeof(why)))
		json_object_set_new(json_object_get(s, "display"), "unavailable_reason",
				json_string(why));
	/* People in the loop (docs/CONTROL.md): what an agent refused with
	 * human_in_control or paused can look at before it tries again. */
	json_t* gate = tools_gate_state();
	json_object_set_new(s, "control", json_pack("{s:O, s:O, s:O, s:I, s:I}",
			"held", json_object_get(gate, "held"),
			"paused", json_object_get(gate, "paused"),
			"approve", json_object_get(gate, "approve"),
			"help_pending", (json_int_t)json_array_size(json_object_get(gate, "help")),
			"approvals_pending", (json_int_t)json_array_size(json_object_get(gate, "approvals"))));
	json_decref(gate);
	tool_result_ok(out, s);
	return 0;
}

static int doctor_handler(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_t* report = doctor_run(options_get(), desktop_display_name(), true);
	if (!report)
		return -ENOMEM;
	tool_result_ok(out, report);
	return 0;
}

#define STRING "{\"type\":\"string\"}"
#define INTEGER "{\"type\":\"integer\"}"
#define BOOLEAN "{\"type\":\"boolean\"}"
#define OBJECT "{\"type\":\"object\"}"
#define OBJECTS "{\"type\":\"array\",\"items\":" OBJECT "}"

/* The shape, not every field: status is for people and scripts, and the
 * default tools/list is sent to the model on every turn (DESIGN.md 6.2
 * lists the fields). */
static const char status_output[] =
	"{\"type\":\"object\","
	"\"required\":[\"server\",\"display\",\"sessions\",\"recordings\",\"tools\",\"versions\"],"
	"\"properties\":{"
	"\"server\":" OBJECT ",\"display\":" OBJECT ",\"sessions\":" INTEGER ","
	"\"recordings\":" OBJECTS ",\"launched\":" OBJECTS ","
	"\"tools\":" INTEGER ",\"control\":" OBJECT ","
	"\"versions\":{\"type\":\"object\",\"additionalProperties\":" STRING "}"
	"}}";

static const char doctor_output[] =
	"{\"type\":\"object\",\"required\":[\"healthy\",\"checks\"],"
	"\"properties\":{"
	"\"healthy\":" BOOLEAN ","
	"\"checks\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
		"\"required\":[\"name\",\"ok\",\"detail\"],"
		"\"properties\":{\"name\":" STRING ",\"ok\":" BOOLEAN ",\"detail\":" STRING "}}}"
	"}}";

static const char no_args[] =
	"{\"type\":\"object\",\"additionalProperties\":false}";

const struct tool_def status_tools[] = {
	{
		.name = "status",
		.title = "Server status",
		.description =
			"deskd's state: version, uptime, display, sessions, recordings, launched programs, "
			"libraries. Works "
			"without a display.",
		.input_schema = no_args,
		.output_schema = status_output,
		.flags = TOOL_READ_ONLY | TOOL_NO_DISPLAY | TOOL_IDEMPOTENT,
		.handler = status_handler,
	},
	{
		.name = "doctor",
		.title = "Diagnose the setup",
		.description =
			"The checks of `deskd doctor` (display, extensions, programs, port, data dir, "
			"token). Works without a display.",
		.input_schema = no_args,
		.output_schema = doctor_output,
		.flags = TOOL_READ_ONLY | TOOL_NO_DISPLAY | TOOL_IDEMPOTENT,
		.handler = doctor_handler,
	},
	{ 0 },
};
