// deskd's GNOME Shell extension for GNOME Shell 45 and later (modules);
// deskd puts service.js in place of the line below.
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';
import Meta from 'gi://Meta';
import * as Main from 'resource:///org/gnome/shell/ui/main.js';
import { Extension } from 'resource:///org/gnome/shell/extensions/extension.js';

// @service

export default class DeskdShell extends Extension {
    enable() {
        startService(this);
    }

    disable() {
        stopService(this);
    }
}
