// deskd's GNOME Shell extension, its body: exactly the window calls deskd
// needs, on the shell's own session-bus connection at /dev/deskd/Shell
// (interface dev.deskd.Shell), since GNOME Shell offers window geometry and
// pids only through Eval, which a user's session refuses. No other calls;
// nothing is run from the bus. deskd writes it out as extension.js inside
// legacy.js (GNOME Shell 42-44) or esm.js (45 on, modules), at their line
// that marks its place: both give it Gio, GLib, Meta and Main.

const IFACE = `<node>
  <interface name="dev.deskd.Shell">
    <property name="Version" type="u" access="read"/>
    <!-- id, title, wm_class, app id, pid, frame x y w h, buffer x y w h,
         flags (1 focused, 2 minimized, 4 maximized, 8 fullscreen,
         16 on the current workspace, 32 an X11 client, 64 modal),
         the window it is transient for (0 none) -->
    <method name="List">
      <arg type="a(tsssuiiiiiiiiut)" direction="out" name="windows"/>
    </method>
    <method name="Activate"><arg type="t" direction="in" name="id"/></method>
    <method name="MoveResize">
      <arg type="t" direction="in" name="id"/>
      <arg type="i" direction="in" name="x"/><arg type="i" direction="in" name="y"/>
      <arg type="i" direction="in" name="width"/><arg type="i" direction="in" name="height"/>
    </method>
    <method name="SetState">
      <arg type="t" direction="in" name="id"/>
      <arg type="s" direction="in" name="state"/>
    </method>
    <method name="Close"><arg type="t" direction="in" name="id"/></method>
  </interface>
</node>`;

// Mutter 49 maximizes both ways with no argument and asks is_maximized();
// before, both took and gave Meta.MaximizeFlags.
const MUTTER_49 = typeof Meta.Window.prototype.is_maximized === 'function';
const maximized = w => (MUTTER_49 ? w.is_maximized() : w.get_maximized() === Meta.MaximizeFlags.BOTH);
const unmaximize = w => (MUTTER_49 ? w.unmaximize() : w.unmaximize(Meta.MaximizeFlags.BOTH));

const STATES = {
    minimize: w => w.minimize(),
    unminimize: w => w.unminimize(),
    maximize: w => (MUTTER_49 ? w.maximize() : w.maximize(Meta.MaximizeFlags.BOTH)),
    unmaximize: w => unmaximize(w),
    fullscreen: w => w.make_fullscreen(),
    unfullscreen: w => w.unmake_fullscreen(),
    raise: w => w.raise(),
};

function windows() {
    return global.get_window_actors()
        .map(a => a.meta_window)
        .filter(w => w && !w.is_skip_taskbar() && w.get_window_type() !== Meta.WindowType.DESKTOP);
}

function find(id) {
    const w = windows().find(w => w.get_id() === id);
    if (!w)
        throw new GLib.Error(Gio.DBusError, Gio.DBusError.INVALID_ARGS, `no window ${id}`);
    return w;
}

class Service {
    get Version() {
        return 1;
    }

    List() {
        const ws = global.workspace_manager.get_active_workspace();
        return windows().map(w => {
            const f = w.get_frame_rect(), b = w.get_buffer_rect();
            const max = maximized(w);
            const flags = (w.has_focus() ? 1 : 0) | (w.minimized ? 2 : 0) | (max ? 4 : 0) |
                (w.is_fullscreen() ? 8 : 0) | (w.located_on_workspace(ws) ? 16 : 0) |
                (w.get_client_type() === Meta.WindowClientType.X11 ? 32 : 0) |
                (w.get_window_type() === Meta.WindowType.MODAL_DIALOG ? 64 : 0);
            const parent = w.get_transient_for();
            return [w.get_id(), w.get_title() || '', w.get_wm_class() || '',
                w.get_gtk_application_id() || w.get_sandboxed_app_id() || '',
                Math.max(0, w.get_pid()), f.x, f.y, f.width, f.height, b.x, b.y, b.width, b.height,
                flags, parent ? parent.get_id() : 0];
        });
    }

    Activate(id) {
        const w = find(id);
        if (w.minimized)
            w.unminimize();
        w.activate(global.get_current_time());
    }

    MoveResize(id, x, y, width, height) {
        const w = find(id);
        if (MUTTER_49 ? w.is_maximized() : w.get_maximized())
            unmaximize(w);
        w.move_resize_frame(true, x, y, width, height);
    }

    SetState(id, state) {
        const act = STATES[state];
        if (!act)
            throw new GLib.Error(Gio.DBusError, Gio.DBusError.INVALID_ARGS, `no state ${state}`);
        act(find(id));
    }

    Close(id) {
        find(id).delete(global.get_current_time());
    }
}

// What enable() and disable() do, on the extension object of either form.
function startService(self) {
    self._object = Gio.DBusExportedObject.wrapJSObject(IFACE, new Service());
    self._object.export(Gio.DBus.session, '/dev/deskd/Shell');
    // The embedded desktop has no one to leave the overview it starts in.
    if (GLib.getenv('DESKD_SHELL_HIDE_OVERVIEW') === '1') {
        if (Main.layoutManager._startingUp)
            self._startup = Main.layoutManager.connect('startup-complete', () => Main.overview.hide());
        else
            Main.overview.hide();
    }
}

function stopService(self) {
    if (self._startup)
        Main.layoutManager.disconnect(self._startup);
    self._startup = null;
    self._object.unexport();
    self._object = null;
}
