#!/usr/bin/python3
"""A GTK 3 editor window that asks before it loses unsaved changes, as real
editors do: closing it (WM_DELETE_WINDOW) while its text is modified opens a
modal "Save changes?" dialog, transient for the window, and the window stays.

    unsaved.py [--title T] [--text TEXT] [--state FILE]

--text puts TEXT in the buffer as an unsaved change. --state FILE gets one
line per event ("ready <xid>", "asked", "closed") so a test can check what
the app went through. Run with Debian's /usr/bin/python3 (python3-gi,
gir1.2-gtk-3.0)."""
import argparse
import sys

import gi
gi.require_version('Gtk', '3.0')
gi.require_version('GdkX11', '3.0')
from gi.repository import Gtk, GdkX11  # noqa: E402  (after require_version)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--title', default='unsaved')
    ap.add_argument('--text', default='')
    ap.add_argument('--state')
    args = ap.parse_args()

    def note(line):
        if args.state:
            with open(args.state, 'a') as f:
                f.write(line + '\n')

    win = Gtk.Window(title=args.title)
    win.set_default_size(420, 260)
    view = Gtk.TextView()
    buf = view.get_buffer()
    buf.set_text(args.text)
    buf.set_modified(bool(args.text))
    win.add(view)

    def on_delete(_w, _e):
        if not buf.get_modified():
            note('closed')
            return False
        note('asked')
        dlg = Gtk.MessageDialog(transient_for=win, modal=True,
                                message_type=Gtk.MessageType.QUESTION,
                                buttons=Gtk.ButtonsType.NONE,
                                text='Save changes before closing?')
        dlg.add_buttons('Close without saving', Gtk.ResponseType.REJECT,
                        'Cancel', Gtk.ResponseType.CANCEL)
        dlg.set_title('Save changes?')
        dlg.connect('response', lambda d, r: (d.destroy(),
                    r == Gtk.ResponseType.REJECT and (note('closed'), Gtk.main_quit())))
        dlg.show_all()
        return True   # keep the window

    win.connect('delete-event', on_delete)
    win.connect('destroy', lambda _w: Gtk.main_quit())
    win.show_all()
    note('ready %d' % win.get_window().get_xid())
    Gtk.main()
    return 0


if __name__ == '__main__':
    sys.exit(main())
