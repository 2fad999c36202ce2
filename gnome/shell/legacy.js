// deskd's GNOME Shell extension for GNOME Shell 42-44 (the imports.gi
// form); deskd puts service.js in place of the line below.
'use strict';
const { Gio, GLib, Meta } = imports.gi;
const Main = imports.ui.main;

// @service

class DeskdShell {
    enable() {
        startService(this);
    }

    disable() {
        stopService(this);
    }
}

function init() {
    return new DeskdShell();
}
