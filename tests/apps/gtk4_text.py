#!/usr/bin/python3
# A GTK 4 text view for the typing tests: Escape appends the buffer's text to
# the records file (one JSON string per line) and clears the buffer.
# FILE.ready appears once the window is shown.
import json
import sys

import gi
gi.require_version('Gtk', '4.0')
from gi.repository import Gdk, Gtk  # noqa: E402  (after require_version)

out = sys.argv[1]


def activate(app):
    win = Gtk.ApplicationWindow(application=app, title='deskd gtk4 text')
    win.set_default_size(900, 600)
    view = Gtk.TextView()
    view.set_accepts_tab(True)
    win.set_child(view)
    keys = Gtk.EventControllerKey()
    # Capture phase: Escape is taken before the view (and its input method).
    keys.set_propagation_phase(Gtk.PropagationPhase.CAPTURE)

    def on_key(_ctl, keyval, _code, _state):
        if keyval != Gdk.KEY_Escape:
            return False
        buf = view.get_buffer()
        text = buf.get_text(buf.get_start_iter(), buf.get_end_iter(), True)
        with open(out, 'a', encoding='utf-8') as f:
            f.write(json.dumps(text) + '\n')
        buf.set_text('')
        return True

    keys.connect('key-pressed', on_key)
    win.add_controller(keys)
    win.present()
    view.grab_focus()
    open(out + '.ready', 'w').close()


app = Gtk.Application(application_id=None)
app.connect('activate', activate)
app.run([sys.argv[0]])
