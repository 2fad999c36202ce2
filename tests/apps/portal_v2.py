#!/usr/bin/env python3
# A desktop portal with persistence, for the GNOME tests: Debian 12's
# xdg-desktop-portal-gnome 43 keeps no remote-desktop grant (persistence is
# RemoteDesktop version 2, GNOME 45 on), so this stands in for a newer one.
# It serves org.freedesktop.portal.RemoteDesktop (version 2) and ScreenCast
# on the bus SERVE and does what xdg-desktop-portal-gnome does underneath:
# a Mutter RemoteDesktop session with a linked ScreenCast of the primary
# monitor on the bus MUTTER, the PipeWire socket PIPEWIRE handed out as the
# session's remote, the input forwarded to Mutter in order.
#
# The person's answer to a dialog is the first word of the file ANSWER, read
# at each Start that has to ask: "remember" grants and returns a restore
# token; "once" grants without one; "decline" declines. A Start whose
# restore_token the portal gave out and nobody used yet is granted without
# asking; a used one is forgotten (tokens are good once). "revoke" in ANSWER
# forgets every token and then declines, as a person who withdrew the grant
# in Settings. Each call is logged to LOG as a JSON line {"call": member,
# "options": {...}, "asked": bool?}. A session that asked RequestClipboard
# gets Mutter's clipboard, its calls and signals passed both ways.
# Usage: portal_v2.py SERVE MUTTER PIPEWIRE ANSWER LOG
import json
import os
import socket
import sys
import uuid

import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

serve_address, mutter_address, pipewire_path, answer_path, log_path = sys.argv[1:6]
log = open(log_path, "a", buffering=1)

PORTAL = "/org/freedesktop/portal/desktop"
RD, SC = "org.freedesktop.portal.RemoteDesktop", "org.freedesktop.portal.ScreenCast"
CLIPBOARD = "org.freedesktop.portal.Clipboard"
M_RD, M_SC = "org.gnome.Mutter.RemoteDesktop", "org.gnome.Mutter.ScreenCast"

INTERFACES = Gio.DBusNodeInfo.new_for_xml("""
<node>
  <interface name="org.freedesktop.portal.RemoteDesktop">
    <method name="CreateSession"><arg type="a{sv}" direction="in"/><arg type="o" direction="out"/></method>
    <method name="SelectDevices"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/><arg type="o" direction="out"/></method>
    <method name="Start"><arg type="o" direction="in"/><arg type="s" direction="in"/><arg type="a{sv}" direction="in"/><arg type="o" direction="out"/></method>
    <method name="NotifyPointerMotion"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/><arg type="d" direction="in"/><arg type="d" direction="in"/></method>
    <method name="NotifyPointerMotionAbsolute"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/><arg type="u" direction="in"/><arg type="d" direction="in"/><arg type="d" direction="in"/></method>
    <method name="NotifyPointerButton"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/><arg type="i" direction="in"/><arg type="u" direction="in"/></method>
    <method name="NotifyPointerAxisDiscrete"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/><arg type="u" direction="in"/><arg type="i" direction="in"/></method>
    <method name="NotifyKeyboardKeycode"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/><arg type="i" direction="in"/><arg type="u" direction="in"/></method>
    <method name="NotifyKeyboardKeysym"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/><arg type="i" direction="in"/><arg type="u" direction="in"/></method>
    <property name="AvailableDeviceTypes" type="u" access="read"/>
    <property name="version" type="u" access="read"/>
  </interface>
  <interface name="org.freedesktop.portal.ScreenCast">
    <method name="SelectSources"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/><arg type="o" direction="out"/></method>
    <method name="OpenPipeWireRemote"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/><arg type="h" direction="out"/></method>
    <property name="AvailableSourceTypes" type="u" access="read"/>
    <property name="AvailableCursorModes" type="u" access="read"/>
    <property name="version" type="u" access="read"/>
  </interface>
  <interface name="org.freedesktop.portal.Clipboard">
    <method name="RequestClipboard"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/></method>
    <method name="SetSelection"><arg type="o" direction="in"/><arg type="a{sv}" direction="in"/></method>
    <method name="SelectionWrite"><arg type="o" direction="in"/><arg type="u" direction="in"/><arg type="h" direction="out"/></method>
    <method name="SelectionWriteDone"><arg type="o" direction="in"/><arg type="u" direction="in"/><arg type="b" direction="in"/></method>
    <method name="SelectionRead"><arg type="o" direction="in"/><arg type="s" direction="in"/><arg type="h" direction="out"/></method>
    <signal name="SelectionOwnerChanged"><arg type="o"/><arg type="a{sv}"/></signal>
    <signal name="SelectionTransfer"><arg type="o"/><arg type="s"/><arg type="u"/></signal>
    <property name="version" type="u" access="read"/>
  </interface>
  <interface name="org.freedesktop.portal.Session">
    <method name="Close"/>
    <signal name="Closed"><arg type="a{sv}"/></signal>
  </interface>
</node>""")
PROPERTIES = {(RD, "version"): 2, (RD, "AvailableDeviceTypes"): 3,
              (SC, "version"): 4, (SC, "AvailableSourceTypes"): 1, (SC, "AvailableCursorModes"): 3,
              (CLIPBOARD, "version"): 1}


def connect(address):
    flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
    return Gio.DBusConnection.new_for_address_sync(address, flags, None, None)


serve, mutter = connect(serve_address), connect(mutter_address)
tokens = set()      # restore tokens given out and not used yet
sessions = {}       # portal session path -> its state


def sender_part(sender):
    return sender[1:].replace(".", "_")


def plain(options):
    return {k: options[k] for k in options.keys()}


def respond(path, code, results):
    # After the method's return, as the portal does: the caller watches
    # the path it computed from its handle_token.
    GLib.idle_add(lambda: serve.emit_signal(None, path, "org.freedesktop.portal.Request", "Response",
                                            GLib.Variant("(ua{sv})", (code, results))) and False)


def mutter_call(name, path, iface, method, args, reply="()"):
    return mutter.call_sync(name, path, iface, method, args, GLib.VariantType(reply),
                            Gio.DBusCallFlags.NONE, 5000, None).unpack()


def answer():
    try:
        with open(answer_path) as f:
            return (f.read().split() or ["decline"])[0]
    except FileNotFoundError:
        return "decline"


def start(session, request_path):
    s = sessions[session]
    if answer() == "revoke":
        tokens.clear()
    offered = s["options"].get("restore_token", "")
    restored = offered in tokens
    tokens.discard(offered)
    word = "remember" if restored else answer()
    log.write(json.dumps({"call": "Start", "asked": not restored, "answer": word}) + "\n")
    if word not in ("remember", "once"):
        respond(request_path, 1, {})
        return
    rd = mutter_call(M_RD, "/org/gnome/Mutter/RemoteDesktop", M_RD, "CreateSession", None, "(o)")[0]
    sid = mutter.call_sync(M_RD, rd, "org.freedesktop.DBus.Properties", "Get",
                           GLib.Variant("(ss)", (M_RD + ".Session", "SessionId")), GLib.VariantType("(v)"),
                           Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
    sc = mutter_call(M_SC, "/org/gnome/Mutter/ScreenCast", M_SC, "CreateSession",
                     GLib.Variant("(a{sv})", ({"remote-desktop-session-id": GLib.Variant("s", sid)},)), "(o)")[0]
    stream = mutter_call(M_SC, sc, M_SC + ".Session", "RecordMonitor",
                         GLib.Variant("(sa{sv})", ("", {"cursor-mode": GLib.Variant("u", 0)})), "(o)")[0]
    s.update(rd=rd, stream=stream)

    def added(_c, _sender, _path, _iface, _signal, params, _data):
        node = params.unpack()[0]
        s["node"] = node
        parameters = mutter.call_sync(M_SC, stream, "org.freedesktop.DBus.Properties", "Get",
                                      GLib.Variant("(ss)", (M_SC + ".Stream", "Parameters")),
                                      GLib.VariantType("(v)"), Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
        w, h = parameters.get("size", (0, 0))
        results = {"devices": GLib.Variant("u", 3),
                   "streams": GLib.Variant("a(ua{sv})", [(node, {"size": GLib.Variant("(ii)", (w, h))})])}
        if s.get("clipboard"):
            mutter_call(M_RD, rd, M_RD + ".Session", "EnableClipboard", GLib.Variant("(a{sv})", ({},)))
            results["clipboard_enabled"] = GLib.Variant("b", True)
            for name in ("SelectionOwnerChanged", "SelectionTransfer"):
                mutter.signal_subscribe(M_RD, M_RD + ".Session", name, rd, None, Gio.DBusSignalFlags.NONE,
                                        relay_clipboard, session)
        if word == "remember" and s["options"].get("persist_mode", 0) == 2:
            token = str(uuid.uuid4())
            tokens.add(token)
            results["restore_token"] = GLib.Variant("s", token)
        respond(request_path, 0, results)
    mutter.signal_subscribe(M_SC, M_SC + ".Stream", "PipeWireStreamAdded", stream, None,
                            Gio.DBusSignalFlags.NONE, added, None)
    mutter_call(M_RD, rd, M_RD + ".Session", "Start", None)


def relay_clipboard(_c, _sender, _path, _iface, signal, params, session):
    """Mutter's clipboard signal -> the portal's, with the session first."""
    if signal == "SelectionTransfer":
        out = GLib.Variant("(osu)", (session, *params.unpack()))
    else:
        given = params.unpack()[0]
        types = given.get("mime-types", [])
        types = types[0] if isinstance(types, tuple) else types    # Mutter 43: "(as)"
        out = GLib.Variant("(oa{sv})", (session, {"mime_types": GLib.Variant("as", list(types)),
                                                  "session_is_owner": GLib.Variant("b", given.get("session-is-owner", False))}))
    serve.emit_signal(None, PORTAL, CLIPBOARD, signal, out)


def mutter_fd(s, method, args, reply):
    """A Mutter clipboard call that answers a file descriptor, answered on."""
    result, fds = mutter.call_with_unix_fd_list_sync(M_RD, s["rd"], M_RD + ".Session", method, args,
                                                     GLib.VariantType("(h)"), Gio.DBusCallFlags.NONE, 5000, None, None)
    fd = fds.get(result.unpack()[0])
    out = Gio.UnixFDList.new()
    index = out.append(fd)
    os.close(fd)
    reply.return_value_with_unix_fd_list(GLib.Variant("(h)", (index,)), out)


def on_clipboard(s, method, args, invocation):
    if method == "RequestClipboard":
        s["clipboard"] = True
    elif method == "SetSelection":
        types = args[1].get("mime_types", [])
        mutter_call(M_RD, s["rd"], M_RD + ".Session", "SetSelection",
                    GLib.Variant("(a{sv})", ({"mime-types": GLib.Variant("as", types)},)))
    elif method == "SelectionWrite":
        return mutter_fd(s, method, GLib.Variant("(u)", (args[1],)), invocation)
    elif method == "SelectionRead":
        return mutter_fd(s, method, GLib.Variant("(s)", (args[1],)), invocation)
    elif method == "SelectionWriteDone":
        mutter_call(M_RD, s["rd"], M_RD + ".Session", method, GLib.Variant("(ub)", (args[1], args[2])))
    invocation.return_value(None)


# The portal's input calls -> Mutter's (the stream's path for the node, a
# boolean for the pressed state).
FORWARD = {
    "NotifyPointerMotion": ("NotifyPointerMotionRelative", lambda s, a: GLib.Variant("(dd)", a)),
    "NotifyPointerMotionAbsolute": ("NotifyPointerMotionAbsolute",
                                    lambda s, a: GLib.Variant("(sdd)", (s["stream"], a[1], a[2]))),
    "NotifyPointerButton": ("NotifyPointerButton", lambda s, a: GLib.Variant("(ib)", (a[0], a[1] == 1))),
    "NotifyPointerAxisDiscrete": ("NotifyPointerAxisDiscrete", lambda s, a: GLib.Variant("(ui)", a)),
    "NotifyKeyboardKeycode": ("NotifyKeyboardKeycode", lambda s, a: GLib.Variant("(ub)", (a[0], a[1] == 1))),
    "NotifyKeyboardKeysym": ("NotifyKeyboardKeysym", lambda s, a: GLib.Variant("(ub)", (a[0], a[1] == 1))),
}


def close(session):
    s = sessions.pop(session, None)
    if s and s.get("rd"):
        try:
            mutter_call(M_RD, s["rd"], M_RD + ".Session", "Stop", None)
        except GLib.Error:
            pass
    if s:
        serve.unregister_object(s["id"])


def on_call(_conn, sender, path, iface, method, params, invocation):
    args = params.unpack()
    if iface == "org.freedesktop.portal.Session":
        log.write(json.dumps({"call": "Close"}) + "\n")
        close(path)
        invocation.return_value(None)
        return
    if iface == CLIPBOARD:
        s = sessions.get(args[0])
        if not s or (method != "RequestClipboard" and "node" not in s):
            invocation.return_dbus_error("org.freedesktop.portal.Error.InvalidArgument", "no such session")
            return
        log.write(json.dumps({"call": method}) + "\n")
        on_clipboard(s, method, args, invocation)
        return
    if method in FORWARD:
        s = sessions.get(args[0])
        if not s or "node" not in s:
            invocation.return_dbus_error("org.freedesktop.portal.Error.InvalidArgument", "no started session")
            return
        target, convert = FORWARD[method]
        mutter_call(M_RD, s["rd"], M_RD + ".Session", target, convert(s, args[2:]))
        invocation.return_value(None)
        return
    options = args[-1]
    if method != "Start":   # start() logs it with the person's answer
        log.write(json.dumps({"call": method, "options": plain(options)}) + "\n")
    if method == "OpenPipeWireRemote":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(pipewire_path)
        fds = Gio.UnixFDList.new()
        index = fds.append(sock.fileno())
        sock.close()
        invocation.return_value_with_unix_fd_list(GLib.Variant("(h)", (index,)), fds)
        return
    request = f"{PORTAL}/request/{sender_part(sender)}/{options.get('handle_token', 'x')}"
    invocation.return_value(GLib.Variant("(o)", (request,)))
    if method == "CreateSession":
        session = f"{PORTAL}/session/{sender_part(sender)}/{options['session_handle_token']}"
        reg = serve.register_object(session, INTERFACES.lookup_interface("org.freedesktop.portal.Session"),
                                    on_call, None, None)
        sessions[session] = {"id": reg, "options": {}}
        respond(request, 0, {"session_handle": GLib.Variant("s", session)})
    elif method == "SelectDevices":
        sessions[args[0]]["options"] = plain(options)
        respond(request, 0, {})
    elif method == "SelectSources":
        respond(request, 0, {})
    elif method == "Start":
        start(args[0], request)


def on_property(_conn, _sender, _path, iface, name):
    return GLib.Variant("u", PROPERTIES[(iface, name)])


for name in (RD, SC, CLIPBOARD):
    serve.register_object(PORTAL, INTERFACES.lookup_interface(name), on_call, on_property, None)
# A caller that leaves ends its sessions, as with the real portal.
serve.signal_subscribe("org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", None, None,
                       Gio.DBusSignalFlags.NONE,
                       lambda *a: [close(p) for p in list(sessions)
                                   if a[5].unpack()[2] == "" and f"/{sender_part(a[5].unpack()[0])}/" in p],
                       None)
serve.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                GLib.Variant("(su)", ("org.freedesktop.portal.Desktop", 4)), GLib.VariantType("(u)"),
                Gio.DBusCallFlags.NONE, 5000, None)
print("ready", flush=True)
GLib.MainLoop().run()
