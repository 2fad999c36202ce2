#!/usr/bin/python3
# The keyboard's XKB lock state on $DISPLAY, for the input tests (libX11
# through ctypes: no extra package). `xkb_state.py` prints
# {"locked_mods": m, "locked_group": g}; `xkb_state.py lock-group G` locks
# group G (0-based) first; `xkb_state.py press KC...` first presses the
# keycodes in order and releases them in reverse, as a person's keyboard
# would (XTest; xdotool's own keysym lookup misses a group switch chord).
import ctypes, json, sys

x11 = ctypes.CDLL('libX11.so.6')
x11.XOpenDisplay.restype = ctypes.c_void_p
x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
x11.XkbGetState.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p]
x11.XkbLockGroup.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
x11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
x11.XCloseDisplay.argtypes = [ctypes.c_void_p]

class XkbStateRec(ctypes.Structure):
    _fields_ = [('group', ctypes.c_ubyte), ('locked_group', ctypes.c_ubyte),
                ('base_group', ctypes.c_ushort), ('latched_group', ctypes.c_ushort),
                ('mods', ctypes.c_ubyte), ('base_mods', ctypes.c_ubyte),
                ('latched_mods', ctypes.c_ubyte), ('locked_mods', ctypes.c_ubyte),
                ('compat_state', ctypes.c_ubyte), ('grab_mods', ctypes.c_ubyte),
                ('compat_grab_mods', ctypes.c_ubyte), ('lookup_mods', ctypes.c_ubyte),
                ('compat_lookup_mods', ctypes.c_ubyte), ('ptr_buttons', ctypes.c_ushort)]

XKB_USE_CORE_KBD = 0x100
dpy = x11.XOpenDisplay(None)
if not dpy:
    sys.exit('cannot open the display')
if len(sys.argv) == 3 and sys.argv[1] == 'lock-group':
    x11.XkbLockGroup(dpy, XKB_USE_CORE_KBD, int(sys.argv[2]))
    x11.XSync(dpy, 0)
elif len(sys.argv) >= 3 and sys.argv[1] == 'press':
    xtst = ctypes.CDLL('libXtst.so.6')
    xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
    codes = [int(a) for a in sys.argv[2:]]
    for kc in codes:
        xtst.XTestFakeKeyEvent(dpy, kc, 1, 0)
    for kc in reversed(codes):
        xtst.XTestFakeKeyEvent(dpy, kc, 0, 0)
    x11.XSync(dpy, 0)
st = XkbStateRec()
if x11.XkbGetState(dpy, XKB_USE_CORE_KBD, ctypes.byref(st)) != 0:
    sys.exit('XkbGetState failed')
print(json.dumps({'locked_mods': st.locked_mods, 'locked_group': st.locked_group}))
x11.XCloseDisplay(dpy)
