"""pftrace.py - a minimal Perfetto protobuf decoder written for the tests from the field numbers
Perfetto's protos document (protos/perfetto/trace/: trace.proto, trace_packet.proto,
track_event/track_event.proto, track_descriptor.proto, process_descriptor.proto,
thread_descriptor.proto, counter_descriptor.proto, debug_annotation.proto,
interned_data/interned_data.proto, clock_snapshot.proto). It shares no code with the writer:
it parses the wire format (varint, fixed64, length-delimited) and maps field numbers itself."""
import struct


def fields(buf):
    """Yields (field number, wire type, value) of one message; value: int or bytes."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v = int.from_bytes(buf[i:i + 8], "little")
            i += 8
        elif wt == 2:
            ln, i = varint(buf, i)
            v = bytes(buf[i:i + ln])
            if len(v) != ln:
                raise ValueError("truncated length-delimited field %d" % f)
            i += ln
        elif wt == 5:
            v = int.from_bytes(buf[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("wire type %d at offset %d" % (wt, i))
        yield f, wt, v


def varint(buf, i):
    shift = v = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, i
        if shift > 70:
            raise ValueError("varint too long")


def s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def msg(buf, spec):
    """Decodes buf by spec {field: (name, kind, repeated)}; kind 'int', 'sint64', 'str', 'bytes',
    'fixed64' or a nested spec dict. Unknown fields are kept under their number."""
    out = {}
    for f, wt, v in fields(buf):
        if f not in spec:
            out.setdefault(f, []).append(v)
            continue
        name, kind, rep = spec[f]
        if isinstance(kind, dict):
            v = msg(v, kind)
        elif kind == "str":
            v = v.decode("utf-8", "surrogateescape")
        elif kind == "sint64":
            v = s64(v)
        elif kind == "double":
            v = struct.unpack("<d", v.to_bytes(8, "little"))[0]
        if rep:
            out.setdefault(name, []).append(v)
        else:
            out[name] = v
    return out


ANNOT = {10: ("name", "str", False), 4: ("int", "sint64", False), 6: ("str", "str", False),
         3: ("uint", "int", False)}
TRACK_EVENT = {9: ("type", "int", False), 11: ("track", "int", False), 10: ("name_iid", "int", False),
               23: ("name", "str", False), 3: ("cat_iids", "int", True), 30: ("counter", "sint64", False),
               44: ("dcounter", "double", False), 47: ("flows", "fixed64", True), 48: ("term_flows", "fixed64", True),
               4: ("annots", ANNOT, True)}
INTERNED = {1: ("cats", {1: ("iid", "int", False), 2: ("name", "str", False)}, True),
            2: ("names", {1: ("iid", "int", False), 2: ("name", "str", False)}, True)}
TRACK_DESC = {1: ("uuid", "int", False), 2: ("name", "str", False), 5: ("parent", "int", False),
              3: ("process", {1: ("pid", "sint64", False), 6: ("name", "str", False)}, False),
              4: ("thread", {1: ("pid", "sint64", False), 2: ("tid", "sint64", False),
                             5: ("name", "str", False)}, False),
              8: ("counter", {3: ("unit", "int", False)}, False)}
CLOCKS = {1: ("clocks", {1: ("id", "int", False), 2: ("ts", "int", False)}, True),
          2: ("primary", "int", False)}
PACKET = {8: ("ts", "int", False), 10: ("seq", "int", False), 13: ("flags", "int", False),
          11: ("event", TRACK_EVENT, False), 12: ("interned", INTERNED, False),
          60: ("track", TRACK_DESC, False), 6: ("clock", CLOCKS, False)}


def decode(data):
    """The packets of a Trace (field 1, repeated TracePacket) as dicts."""
    pk = []
    for f, wt, v in fields(data):
        if f != 1 or wt != 2:
            raise ValueError("Trace has field %d (wire %d); only packet = 1 exists" % (f, wt))
        pk.append(msg(v, PACKET))
    return pk


def slices(packets):
    """Tracks {uuid: descriptor}, slices [dict(track, t0, t1, name, cat, depth, parent, flows,
    term_flows, annots)], instants, counters {uuid: [(ts, v)]}, problems [str]. Slices are
    rebuilt from BEGIN/END pairs per track (a stack each), names and categories resolved through
    the interned data of the sequence."""
    tracks, names, cats = {}, {}, {}
    stacks, out, inst, ctr, bad = {}, [], [], {}, []
    for p in packets:
        if "interned" in p:
            for e in p["interned"].get("names", []):
                names[e["iid"]] = e["name"]
            for e in p["interned"].get("cats", []):
                cats[e["iid"]] = e["name"]
        if "track" in p:
            tracks[p["track"]["uuid"]] = p["track"]
        ev = p.get("event")
        if not ev:
            continue
        ts, tr, ty = p.get("ts", 0), ev.get("track", 0), ev.get("type", 0)
        if tr not in tracks:
            bad.append("event on undeclared track %d" % tr)
        st = stacks.setdefault(tr, [])
        if ty == 1:
            s = dict(track=tr, t0=ts, t1=None, name=names.get(ev.get("name_iid"), ev.get("name")),
                     cat=[cats.get(c) for c in ev.get("cat_iids", [])], depth=len(st),
                     parent=st[-1] if st else None, flows=ev.get("flows", []),
                     term_flows=ev.get("term_flows", []),
                     annots={a.get("name"): a.get("int", a.get("str")) for a in ev.get("annots", [])})
            if s["name"] is None:
                bad.append("slice without a resolvable name at %d" % ts)
            st.append(s)
            out.append(s)
        elif ty == 2:
            if not st:
                bad.append("END without BEGIN on track %d at %d" % (tr, ts))
                continue
            s = st.pop()
            s["t1"] = ts
            if ts < s["t0"]:
                bad.append("slice ends before it begins (%s)" % s["name"])
            if s["parent"] is not None and s["parent"]["t1"] is not None:
                bad.append("child ended after its parent")
        elif ty == 3:
            inst.append(dict(track=tr, t=ts, name=names.get(ev.get("name_iid"), ev.get("name"))))
        elif ty == 4:
            ctr.setdefault(tr, []).append((ts, ev.get("counter", ev.get("dcounter"))))
    for tr, st in stacks.items():
        if st:
            bad.append("%d slices never ended on track %d" % (len(st), tr))
    # children must end by their parent's end (checked when both are known)
    for s in out:
        if s["parent"] is not None and s["t1"] is not None and s["t1"] > s["parent"]["t1"]:
            bad.append("child %s ends after its parent %s" % (s["name"], s["parent"]["name"]))
    return tracks, out, inst, ctr, bad
