# The real-Bluetooth world inside the guest: how to start, stop and wait on each part of it.
# Sourced by guest.sh. Every wait follows an event (a log line, a D-Bus name, a socket), each with a
# bound, so a scenario fails with the step it was at instead of hanging.
#
# The parts: the system bus; real bluetoothd 5.66 (-d, its log is where pairing and profiles show);
# btvirt, BlueZ's controller emulator (hci0 for bluetoothd, and a second dual-mode controller on
# the unix socket /tmp/bt-server-bredrle for the speaker); the A2DP source (BlueALSA, or PipeWire
# with WirePlumber and pipewire-pulse); the speaker (speaker.py, Bumble); and speakerd.

BB=/bb/busybox   # static busybox from the initramfs: far cheaper to exec than host tools under TCG
HERE=$REALBT_REPO/Tests/RealBluetooth
BIN=$REALBT_REPO/.build/release/installed-image/bin   # as installed: scripts/link-shared
CACHE=$REALBT_REPO/.build-realbt
LOGS=/results/logs   # the current scenario's logs (guest.sh points it at each scenario's folder)
SPEAKER_CONTROL=/tmp/speaker.ctl
SPEAKER_NAME="RealBT Speaker"
export PYTHONUNBUFFERED=1

uptime_s() { local u _; read -r u _ </proc/uptime; echo "$u"; }
note() { echo "[$(uptime_s)] realbt: $*"; }

# size FILE: how much of a log exists now, so a later wait looks only at what comes after.
size() { if [[ -f $1 ]]; then $BB stat -c %s "$1"; else echo 0; fi; }

# wait_for SECONDS FILE TEXT [FROM]: until TEXT appears in FILE past byte FROM. It keeps the file
# open and reads only what is new (no fork, no re-reading a growing debug log under TCG); at the
# end of the file it looks again every 0.1 s: the log line is the event, the wait its delivery.
wait_for() {
  local limit=$1 file=$2 text=$3 from=${4:-0} line partial= fd LC_ALL=C
  local end=$((SECONDS + limit))
  until [[ -f $file ]]; do ((SECONDS < end)) || break; $BB usleep 100000; done
  if [[ -f $file ]]; then
    exec {fd}<"$file"
    ((from == 0)) || read -r -d '' -N "$from" -u "$fd" _ || true
    while ((SECONDS < end)); do
      if IFS= read -r -u "$fd" line; then
        line=$partial$line partial=
        [[ $line == *"$text"* ]] && { exec {fd}<&-; return 0; }
      else
        partial+=$line  # the end of the file, maybe mid-line: the rest comes later
        [[ $partial == *"$text"* ]] && { exec {fd}<&-; return 0; }
        $BB usleep 100000
      fi
    done
    exec {fd}<&-
  fi
  echo "timed out after ${limit}s waiting for '$text' in $(basename "$file")"
  return 1
}

# wait_gone SECONDS PID: until the process has exited.
wait_gone() {
  local end=$((SECONDS + $1))
  while ((SECONDS < end)); do kill -0 "$2" 2>/dev/null || return 0; $BB usleep 100000; done
  return 1
}

# stop PIDVAR [SIGNAL]: stops the process whose pid the variable holds, and forgets it.
stop() {
  local pid=${!1:-}
  [[ -n $pid ]] || return 0
  kill "-${2:-TERM}" "$pid" 2>/dev/null || true
  wait_gone 10 "$pid" || { kill -KILL "$pid" 2>/dev/null || true; wait_gone 5 "$pid" || true; }
  wait "$pid" 2>/dev/null || true
  printf -v "$1" ''
}

start_bus() {
  mkdir -p /run/dbus /etc/dbus-1/system.d
  dbus-uuidgen --ensure=/etc/machine-id
  # speakerd's own policy, plus one line for this guest: here speakerd runs as root, and the
  # policy lets only the speakerd user own the name.
  cp "$REALBT_REPO/systemd/dbus/io.speakerd.Daemon.conf" /etc/dbus-1/system.d/
  # The user and group that policy names (the package's sysusers entry makes them), so that
  # dbus-daemon reads it as on an installed system.
  $BB grep -q '^speakerd:' /etc/passwd || echo 'speakerd:x:990:990::/var/lib/speakerd:/usr/sbin/nologin' >>/etc/passwd
  $BB grep -q '^speakerd:' /etc/group || echo 'speakerd:x:990:' >>/etc/group
  cat >/etc/dbus-1/system.d/zz-realbt.conf <<'EOF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><policy user="root"><allow own="io.speakerd.Daemon"/></policy></busconfig>
EOF
  dbus-daemon --system --fork
  local end=$((SECONDS + 20))
  until [[ -S /run/dbus/system_bus_socket ]]; do ((SECONDS < end)) || return 1; $BB usleep 50000; done
}

BLUETOOTHD=
start_bluetoothd() {
  local from; from=$(size "$LOGS/bluetoothd.log")
  /usr/libexec/bluetooth/bluetoothd -n -d >>"$LOGS/bluetoothd.log" 2>&1 &
  BLUETOOTHD=$!
  wait_for 30 "$LOGS/bluetoothd.log" "Starting SDP server" "$from"
}
# adapter_ready FROM: bluetoothd has taken hci0 (after btvirt, or after bluetoothd started again).
adapter_ready() { wait_for 30 "$LOGS/bluetoothd.log" "adapter /org/bluez/hci0 has been enabled" "$1"; }
stop_bluetoothd() { stop BLUETOOTHD; }

BTVIRT=
start_btvirt() {
  rm -f /tmp/bt-server-*
  # The kernel gives btvirt 2 s to answer its first HCI command: read the program in from 9p
  # beforehand, so that its start does not spend them paging it in on a slow guest.
  cat /usr/bin/btvirt >/dev/null
  (cd /tmp && exec nice -n -10 btvirt -l1 -s >>"$LOGS/btvirt.log" 2>&1) &
  BTVIRT=$!
  local end=$((SECONDS + 20))
  until [[ -S /tmp/bt-server-bredrle ]]; do ((SECONDS < end)) || { echo "btvirt made no socket"; return 1; }; $BB usleep 50000; done
}
stop_btvirt() { stop BTVIRT; }
# btvirt_up: btvirt started and hci0 enabled by bluetoothd. Once more if the kernel gave up on
# btvirt's answer to its first HCI command (2 s, which a guest starved of CPU by a busy host can
# miss: "Opcode 0x0c03 failed: -110"); the second start finds everything paged in.
btvirt_up() {
  local from attempt
  for attempt in 1 2 3; do
    from=$(size "$LOGS/bluetoothd.log")
    start_btvirt || return 1
    adapter_ready "$from" && return 0
    note "no hci0 from btvirt (attempt $attempt)"
    stop_btvirt
  done
  return 1
}

BACKEND_PIDS=()
# start_backend: the A2DP source; ready once it has registered its endpoints with bluetoothd.
start_backend() {
  local from; from=$(size "$LOGS/bluetoothd.log")
  if [[ $BACKEND == pipewire ]]; then
    # libspa-0.2-bluetooth is unpacked in the cache, not installed on the host (scripts/setup
    # says why): it goes into the guest's /usr overlay only.
    cp -a "$CACHE/spa-bluetooth/usr/." /usr/
    export XDG_RUNTIME_DIR=/run/user/0
    mkdir -p -m 700 "$XDG_RUNTIME_DIR"
    if [[ ! -S $XDG_RUNTIME_DIR/bus ]]; then
      dbus-daemon --session --fork --address="unix:path=$XDG_RUNTIME_DIR/bus"
    fi
    export DBUS_SESSION_BUS_ADDRESS=unix:path=$XDG_RUNTIME_DIR/bus
    # No logind seat here: WirePlumber 0.4 would keep its BlueZ monitor off (docs/SOUND-SERVERS.md).
    mkdir -p /etc/wireplumber/bluetooth.lua.d
    echo 'bluez_monitor.properties["with-logind"] = false' >/etc/wireplumber/bluetooth.lua.d/51-speakerd.lua
    pipewire >>"$LOGS/pipewire.log" 2>&1 &
    BACKEND_PIDS+=($!)
    local end=$((SECONDS + 20))
    until [[ -S $XDG_RUNTIME_DIR/pipewire-0 ]]; do ((SECONDS < end)) || { echo "pipewire made no socket"; return 1; }; $BB usleep 50000; done
    wireplumber >>"$LOGS/wireplumber.log" 2>&1 &
    BACKEND_PIDS+=($!)
    pipewire-pulse >>"$LOGS/pipewire-pulse.log" 2>&1 &
    BACKEND_PIDS+=($!)
    end=$((SECONDS + 20))
    until [[ -S $XDG_RUNTIME_DIR/pulse/native ]]; do ((SECONDS < end)) || { echo "pipewire-pulse made no socket"; return 1; }; $BB usleep 50000; done
  else
    bluealsa -p a2dp-source >>"$LOGS/bluealsa.log" 2>&1 &
    BACKEND_PIDS+=($!)
  fi
  wait_for 40 "$LOGS/bluetoothd.log" "Endpoint registered" "$from"
}
stop_backend() {
  local pid
  for pid in "${BACKEND_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${BACKEND_PIDS[@]}"; do wait_gone 10 "$pid" || kill -KILL "$pid" 2>/dev/null || true; done
  BACKEND_PIDS=()
}

SPEAKER=
SPEAKER_ADDRESS=
SPEAKER_FROM=0
# launch_speaker: starts the speaker program; speaker_ready "$SPEAKER_FROM" waits for it. Apart,
# so that the rest of the world starts while Python does (its start is the slowest under TCG).
launch_speaker() {
  SPEAKER_FROM=$(size "$LOGS/speaker.log")
  rm -f "$SPEAKER_CONTROL"
  # In /tmp: what the speaker hears goes to tmpfs (speaker.py says why).
  # Ahead of the rest of the guest: a speaker that falls behind the stream loses audio (btvirt
  # drops what it cannot deliver), while a sender that falls behind only leaves a gap.
  (cd /tmp && exec nice -n -10 "$CACHE/venv/bin/python" "$HERE/speaker.py" --name "$SPEAKER_NAME" \
      --control "$SPEAKER_CONTROL" ${SPEAKER_FLAGS:-} unix:/tmp/bt-server-bredrle >>"$LOGS/speaker.log" 2>&1) &
  SPEAKER=$!
}
# speaker_ready FROM [SECONDS]: the speaker serves on its controller (again); sets SPEAKER_ADDRESS.
speaker_ready() {
  wait_for "${2:-60}" "$LOGS/speaker.log" "speaker: ready" "$1" || return 1
  local content; content=$(<"$LOGS/speaker.log")
  content=${content:$1}
  content=${content#*speaker: ready }
  SPEAKER_ADDRESS=${content:0:17}
  note "speaker ready at $SPEAKER_ADDRESS"
}
stop_speaker() { stop SPEAKER INT; }

# speaker COMMAND [EVENT]: tells the speaker to do something and waits until it says it did.
speaker() {
  local command=$1 event=${2:-} from; from=$(size "$LOGS/speaker.log")
  echo "$command" >"$SPEAKER_CONTROL"
  [[ -z $event ]] || wait_for 30 "$LOGS/speaker.log" "speaker: $event" "$from"
}

SPEAKERD=
# launch_speakerd: starts speakerd with the scenarios' config, or SPEAKERD_CONF's; the moment it
# is executed (CLOCK_REALTIME, bash's EPOCHREALTIME) goes to /tmp/speakerd.exec for the
# benchmarks. start_speakerd also waits until its API answers.
launch_speakerd() {
  mkdir -p /var/lib/speakerd
  local conf=${SPEAKERD_CONF:-/tmp/speakerd.conf}
  [[ -n ${SPEAKERD_CONF:-} ]] || cat >"$conf" <<EOF
# The real-Bluetooth guest's speakerd: its defaults, except a reconnect backoff bounded to a few
# seconds so that a speaker coming back is retried within a scenario's time.
reconnect_max_seconds = 4
scan_seconds = 12
play_timeout_seconds = 120
EOF
  local output=auto
  [[ $BACKEND == pipewire ]] && output=pulseaudio
  (
    echo "$EPOCHREALTIME" >/tmp/speakerd.exec
    PULSE_SERVER=${XDG_RUNTIME_DIR:+unix:$XDG_RUNTIME_DIR/pulse/native} \
      exec "$BIN/speakerd" --config "$conf" --state-dir /var/lib/speakerd --bus system --audio-output "$output"
  ) >>"$LOGS/speakerd.log" 2>&1 &
  SPEAKERD=$!
}
start_speakerd() {
  launch_speakerd
  local end=$((SECONDS + 30))
  until cli status >/dev/null 2>&1; do
    ((SECONDS < end)) || { echo "speakerd's API never answered"; return 1; }
    kill -0 "$SPEAKERD" 2>/dev/null || { echo "speakerd exited"; return 1; }
    $BB usleep 200000
  done
}
stop_speakerd() { stop SPEAKERD; }

cli() { "$BIN/composer-cli" "$@"; }

# connected ADDRESS FROM: bluetoothd says the speaker's A2DP sink profile is up.
a2dp_connected() { wait_for "${3:-40}" "$LOGS/bluetoothd.log" "State changed" "$2"; }

# playing_heard SECONDS: until the speaker has heard that many seconds of this song's audio.
heard_seconds() { wait_for "${3:-60}" "$LOGS/speaker.log" "speaker: heard $1 s" "$2"; }
