#!/usr/bin/env python3
# A GTK3 window whose buttons have huge accessible names, for the a11y byte
# limits (docs/DESIGN.md 6.3): --buttons push buttons labelled "b1", "b2",
# ... whose accessible name and description are --name-bytes bytes of
# --char (a 3-byte character by default, so a cut at a round byte count
# lands inside a character), and an entry holding --entry-text. Writes its
# pid to --pid-file first, so a test can stop and kill it by pid. --plain:
# the buttons keep their labels as names, in one column (a long list to
# page through).
import argparse
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument('--pid-file', required=True)
ap.add_argument('--title', default='deskd gtk3 names')
ap.add_argument('--buttons', type=int, default=3)
ap.add_argument('--name-bytes', type=int, default=1 << 20)
ap.add_argument('--char', default='\u65e5')   # 日: 3 bytes in UTF-8
ap.add_argument('--char-code', type=int)      # the character by number (34: ")
ap.add_argument('--entry-text', default='\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8')
ap.add_argument('--plain', action='store_true')   # buttons named by their labels, in one column
args = ap.parse_args()

tmp = args.pid_file + '.tmp'
with open(tmp, 'w') as f:
    f.write(str(os.getpid()))
os.replace(tmp, args.pid_file)

try:
    import gi
except ImportError:
    # A python3 first on PATH that is not Debian's (pyenv) lacks python3-gi.
    if os.path.realpath(sys.executable) != os.path.realpath('/usr/bin/python3') \
            and os.access('/usr/bin/python3', os.X_OK):
        os.execv('/usr/bin/python3', ['/usr/bin/python3'] + sys.argv)
    raise
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk  # noqa: E402

ch = chr(args.char_code) if args.char_code else args.char
huge = ch * (args.name_bytes // len(ch.encode('utf-8')))

win = Gtk.Window(title=args.title)
win.set_default_size(480, 360)
win.connect('destroy', Gtk.main_quit)
if args.plain:
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
else:
    box = Gtk.FlowBox()
    box.set_selection_mode(Gtk.SelectionMode.NONE)
entry = Gtk.Entry()
entry.set_text(args.entry_text)
entry.get_accessible().set_name('Entry')
box.add(entry)
for i in range(args.buttons):
    b = Gtk.Button(label='b%d' % (i + 1))
    acc = b.get_accessible()
    if not args.plain:
        acc.set_name(huge)
        acc.set_description('dd' + huge)   # not the name: it is listed
    box.add(b)
scroll = Gtk.ScrolledWindow()
scroll.add(box)
win.add(scroll)
win.show_all()
print('ready', flush=True)
sys.exit(Gtk.main())
