/* desktop/'s settings from the command line. */

#include "server/desktop_config.h"
#include "base/options.h"

void server_desktop_config(const struct options* opts, struct desktop_config* out)
{
	*out = (struct desktop_config){
		.display = opts->display,
		.wayland = opts->wayland,
		.gnome = opts->gnome,
		.gnome_shell = opts->gnome_shell,
		.gnome_bus = opts->gnome_bus,
		.gnome_portal = opts->gnome_portal,
		.wayland_display = opts->wayland_display,
		.sway_socket = opts->sway_socket,
		.xwayland_display = opts->xwayland_display,
		.display_reattach = opts->display_reattach,
		.virtual_width = opts->virtual_width,
		.virtual_height = opts->virtual_height,
		.wm = opts->wm,
		.launch = opts->launch,
		.n_launch = opts->n_launch,
		.allow_launch = opts->allow_launch,
		.n_allow_launch = opts->n_allow_launch,
		.data_dir = opts->data_dir,
		.output_root = opts->output_root,
		.n_output_root = opts->n_output_root,
		.max_recordings = opts->max_recordings,
		.memory_idle_ms = opts->memory_idle_s > 0 ? opts->memory_idle_s * 1000 : -1,
	};
}
