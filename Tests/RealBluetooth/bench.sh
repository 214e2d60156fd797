# The real-Bluetooth benchmarks, run inside the guest by its init (scripts/bench-real-bluetooth
# boots it with realbt.script pointing here). One boot, the PipeWire stack, one paired speaker;
# each run times speakerd and what a user would run instead, side by side (FIGURE: what it times):
#
#   connect        exec → bluetoothd receives Device1.Connect for the known speaker
#                    speakerd                vs  bluetooth-autoconnect 1.2.0 (its one pass)
#   exec-sink      exec → the speaker's sink exists on the sound server (the same two)
#   exec-ready     exec → speakerd's ReadinessChanged "playbackReady"
#   exec-audible   exec → the first audible sample reaches the speaker
#                    speakerd, then `composer-cli play` as soon as its name is on the bus
#                                            vs  `bluetooth-autoconnect && fluidsynth -a pulseaudio`
#   on-connect,    the speaker switched on (after OFF seconds off) → Device1.Connect, → the
#   on-sink,         speaker's sink, → speakerd's "playbackReady"
#   on-ready         speakerd                vs  `bluetooth-autoconnect --daemon`
#   play-audible   play → the first audible sample reaches the speaker (connected, ready, idle)
#                    `composer-cli play`     vs  cold `fluidsynth -a pulseaudio`, `pw-play` of the WAV
#   play-call,     its parts: exec → speakerd receives Play; exec → the player's stream (a sink
#   play-stream,     input) appears on the sound server; that stream → the first audible sample
#   stream-audible
#
# speakerd's readiness has no match in the alternative, whose ready is the moment the speaker's
# sink exists; the host's report sets the two side by side.
#
# Every stamp is CLOCK_REALTIME, the one clock all the guest's processes read (no NTP runs here,
# so it does not step): bash's EPOCHREALTIME in the child just before it execs the program;
# dbus-monitor's time= when it receives a message from the system bus (a Connect or Play call, a
# ReadinessChanged signal); `pactl subscribe`'s events stamped by the bash loop reading them;
# speaker.py's time.time() when a packet arrives (`audible`) or when it answers pages again (`on`).
# Each measurement appends "FIGURE CANDIDATE RUN START END NOTE" to /results/bench.tsv; the host
# computes the figures.
set -uo pipefail
BB=/bb/busybox
param() { $BB sed -n "s/.*realbt\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
BACKEND=pipewire
RUNS=$(param runs)
OFF=$(param off)
. "$REALBT_REPO/Tests/RealBluetooth/world.sh"
BIN=$(param bin)/bin   # the programs under test, as installed, copied into the cache by the host
AUTOCONNECT=$CACHE/autoconnect-venv/bin/bluetooth-autoconnect
SOUNDFONT=/usr/share/sounds/sf2/TimGM6mb.sf2   # speakerd's default, for fluidsynth too
SONG=/results/songs/short.mid                  # a piano C5 from the first tick
WAV=/results/songs/short.wav                   # the same, as `composer-cli render` writes it
OUT=/results/bench.tsv
LOGS=/results/bench-world
MONITOR=$LOGS/dbus-monitor.log
SINKS=$LOGS/pactl-subscribe.log

# -- stamps ---------------------------------------------------------------------------------
# monitor_stamp FROM TEXT: the time= of the first dbus-monitor message past byte FROM whose
# header or argument holds TEXT (an argument's stamp is its message's).
monitor_stamp() {
  $BB tail -c +"$(($1 + 1))" "$MONITOR" | $BB awk -v text="$2" '
    / time=/ { stamp = $0; sub(/.* time=/, "", stamp); sub(/ .*/, "", stamp) }
    index($0, text) { print stamp; exit }'
}
# sink_stamp FROM: when the speaker's sink appeared on the sound server past byte FROM.
sink_stamp() { $BB tail -c +"$(($1 + 1))" "$SINKS" | $BB awk '/ bluez_output/ { print $1; exit }'; }
# speaker_stamp FROM TEXT: the "(at STAMP)" or "at STAMP" of the speaker's first line past FROM with TEXT.
speaker_stamp() {
  $BB tail -c +"$(($1 + 1))" "$LOGS/speaker.log" | $BB grep -m1 -- "$2" | $BB sed -n 's/.*at \([0-9]*\.[0-9]*\).*/\1/p'
}
# stream_stamp FROM: when the first stream (a sink input) appeared on the sound server past FROM.
stream_stamp() { $BB tail -c +"$(($1 + 1))" "$SINKS" | $BB awk "/'new' on sink-input #/ { print \$1; exit }"; }
exec_stamp() { cat "/tmp/$1.exec"; }

# record FIGURE CANDIDATE START END [NOTE]
record() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$RUN" "${3:--}" "${4:--}" "${5:-}" >>"$OUT"
  note "    $1 $2: ${5:-} $($BB awk -v a="${3:-0}" -v b="${4:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.1f ms", (b - a) * 1000 }')"
}
# failed FIGURE CANDIDATE WHY: a measurement that did not finish, kept as such.
failed() { record "$1" "$2" - - "failed: $3"; }

# -- the programs ---------------------------------------------------------------------------
# launch NAME COMMAND...: starts COMMAND in the background, its exec stamped in /tmp/NAME.exec,
# its output in NAME.log; LAUNCHED is its pid.
LAUNCHED=
launch() {
  local name=$1; shift
  ( echo "$EPOCHREALTIME" >"/tmp/$name.exec"; exec "$@" ) >>"$LOGS/$name.log" 2>&1 &
  LAUNCHED=$!
}
# Once its first audible sample is timed, a song is stopped (composer-cli stop, or SIGTERM to the
# player), the same for every candidate.
# ended PID [SECONDS]: until the process has exited, killed past the bound.
ended() {
  local pid=$1
  wait_gone "${2:-60}" "$pid" || { echo "pid $pid still running: stopped"; kill "$pid" 2>/dev/null; wait_gone 5 "$pid" || kill -KILL "$pid" 2>/dev/null; }
  wait "$pid" 2>/dev/null || true
}

DEVICE=
# device_connected: bluetoothd says the speaker is connected.
device_connected() {
  [[ $(dbus-send --system --print-reply=literal --dest=org.bluez "$DEVICE" org.freedesktop.DBus.Properties.Get \
        string:org.bluez.Device1 string:Connected 2>/dev/null) == *true* ]]
}
speaker_sink() { pactl list short sinks 2>/dev/null | $BB grep -q "bluez_output.${SPEAKER_ADDRESS//:/_}"; }

# unlink: the link down, the speaker's sink gone and its stream idle, where every cold start
# begins (the programs under test already stopped).
unlink() {
  local from_speaker from_sinks had_sink=0
  if device_connected; then
    from_speaker=$(size "$LOGS/speaker.log")
    from_sinks=$(size "$SINKS")
    speaker_sink && had_sink=1
    dbus-send --system --print-reply --dest=org.bluez "$DEVICE" org.bluez.Device1.Disconnect >/dev/null || return 1
    wait_for 30 "$LOGS/speaker.log" "speaker: disconnected" "$from_speaker" || return 1
    ((had_sink == 0)) || wait_for 30 "$SINKS" "'remove' on sink #" "$from_sinks" || return 1
  fi
  speaker idle idle
}

# heard_audible FROM: after the speaker heard a second since `clear` (FROM: its log before the
# start), when the first audible sample of it arrived; sets AUDIBLE (a stamp) and AUDIBLE_NOTE.
heard_audible() {
  AUDIBLE= AUDIBLE_NOTE=
  heard_seconds 1 "$1" 90 || return 1
  local from; from=$(size "$LOGS/speaker.log")
  speaker audible "audible" || return 1
  AUDIBLE=$(speaker_stamp "$from" "speaker: audible at")
  AUDIBLE_NOTE=$($BB tail -c +"$((from + 1))" "$LOGS/speaker.log" | $BB grep -m1 "speaker: audible" | $BB sed 's/.*(\(.*\))/\1/')
  [[ -n $AUDIBLE ]] || { echo "nothing audible: $AUDIBLE_NOTE"; return 1; }
}

# -- speakerd -------------------------------------------------------------------------------
speakerd_block() {
  local from from_speaker from_sinks on ready
  unlink || { failed connect speakerd "could not unlink the speaker"; return 1; }
  # exec → Connect (and on to playbackReady).
  from=$(size "$MONITOR") from_sinks=$(size "$SINKS")
  launch_speakerd
  if wait_for 30 "$MONITOR" "member=Connect" "$from"; then
    record connect speakerd "$(exec_stamp speakerd)" "$(monitor_stamp "$from" "member=Connect")"
  else
    failed connect speakerd "no Connect"
  fi
  if wait_for 60 "$MONITOR" 'string "playbackReady"' "$from"; then
    record exec-ready speakerd "$(exec_stamp speakerd)" "$(monitor_stamp "$from" 'string "playbackReady"')"
    record exec-sink speakerd "$(exec_stamp speakerd)" "$(sink_stamp "$from_sinks")"
  else
    failed exec-ready speakerd "never playbackReady"; stop_speakerd; return 1
  fi
  # play → audible, the daemon ready and the speaker's stream idle.
  speaker idle idle && speaker clear cleared
  from=$(size "$MONITOR") from_sinks=$(size "$SINKS") from_speaker=$(size "$LOGS/speaker.log")
  launch play "$BIN/composer-cli" play "$SONG"
  if heard_audible "$from_speaker"; then
    record play-audible speakerd "$(exec_stamp play)" "$AUDIBLE" "$AUDIBLE_NOTE"
    record play-call speakerd "$(exec_stamp play)" "$(monitor_stamp "$from" "member=Play")"
    record play-stream speakerd "$(exec_stamp play)" "$(stream_stamp "$from_sinks")"
    record stream-audible speakerd "$(stream_stamp "$from_sinks")" "$AUDIBLE"
  else
    failed play-audible speakerd "$AUDIBLE_NOTE"
  fi
  ended "$LAUNCHED"
  cli stop >/dev/null
  # switched on → playbackReady: off for OFF seconds (the one settle here: how long the speaker
  # stays off decides where speakerd's reconnect backoff is when it comes back), then on.
  speaker idle idle && speaker off off
  $BB sleep "$OFF"
  from=$(size "$MONITOR") from_sinks=$(size "$SINKS") from_speaker=$(size "$LOGS/speaker.log")
  speaker on on
  on=$(speaker_stamp "$from_speaker" "speaker: on")
  if wait_for 120 "$MONITOR" 'string "playbackReady"' "$from"; then
    record on-ready speakerd "$on" "$(monitor_stamp "$from" 'string "playbackReady"')"
    record on-connect speakerd "$on" "$(monitor_stamp "$from" "member=Connect")"
    record on-sink speakerd "$on" "$(sink_stamp "$from_sinks")"
  else
    failed on-ready speakerd "never playbackReady after the speaker came back"
  fi
  stop_speakerd
  # exec → audible: speakerd started, `composer-cli play` as soon as speakerd's name is on the bus.
  unlink || { failed exec-audible speakerd "could not unlink the speaker"; return 1; }
  speaker clear cleared
  from_speaker=$(size "$LOGS/speaker.log")
  launch_speakerd
  ( gdbus wait --system --timeout 30 io.speakerd.Daemon && exec "$BIN/composer-cli" play "$SONG" ) >>"$LOGS/play.log" 2>&1 &
  local play=$!
  if heard_audible "$from_speaker"; then
    record exec-audible speakerd "$(exec_stamp speakerd)" "$AUDIBLE" "$AUDIBLE_NOTE"
  else
    failed exec-audible speakerd "$AUDIBLE_NOTE"
  fi
  ended "$play"
  cli stop >/dev/null
  speaker idle idle
  stop_speakerd
}

# -- what a user would run instead ----------------------------------------------------------
FLUIDSYNTH=(fluidsynth -q -ni -a pulseaudio "$SOUNDFONT" "$SONG")
alternative_block() {
  local from from_speaker from_sinks on
  unlink || { failed connect bluetooth-autoconnect "could not unlink the speaker"; return 1; }
  # exec → Connect: its one pass over the paired and trusted devices.
  from=$(size "$MONITOR") from_sinks=$(size "$SINKS")
  launch autoconnect "$AUTOCONNECT"
  local pass=$LAUNCHED
  if wait_for 60 "$MONITOR" "member=Connect" "$from"; then
    record connect bluetooth-autoconnect "$(exec_stamp autoconnect)" "$(monitor_stamp "$from" "member=Connect")"
  else
    failed connect bluetooth-autoconnect "no Connect"
  fi
  ended "$pass"
  if wait_for 30 "$SINKS" " bluez_output" "$from_sinks"; then
    record exec-sink bluetooth-autoconnect "$(exec_stamp autoconnect)" "$(sink_stamp "$from_sinks")"
  else
    failed exec-sink bluetooth-autoconnect "no sink for the speaker"; return 1
  fi
  # play → audible: cold fluidsynth, then pw-play of the rendered WAV, to the default sink (the
  # speaker's: the guest has no other).
  local name
  for name in fluidsynth pw-play; do
    speaker idle idle && speaker clear cleared
    from_sinks=$(size "$SINKS") from_speaker=$(size "$LOGS/speaker.log")
    if [[ $name == fluidsynth ]]; then launch fluidsynth "${FLUIDSYNTH[@]}"; else launch pw-play pw-play "$WAV"; fi
    if heard_audible "$from_speaker"; then
      record play-audible "$name" "$(exec_stamp "$name")" "$AUDIBLE" "$AUDIBLE_NOTE"
      record play-stream "$name" "$(exec_stamp "$name")" "$(stream_stamp "$from_sinks")"
      record stream-audible "$name" "$(stream_stamp "$from_sinks")" "$AUDIBLE"
    else
      failed play-audible "$name" "$AUDIBLE_NOTE"
    fi
    stop LAUNCHED
  done
  # switched on → the speaker's sink, under `bluetooth-autoconnect --daemon` (its service form).
  speaker idle idle
  from=$(size "$LOGS/autoconnect-daemon.log")
  launch autoconnect-daemon "$AUTOCONNECT" --daemon
  local daemon=$LAUNCHED
  wait_for 60 "$LOGS/autoconnect-daemon.log" "Connection pass complete" "$from" \
    || { failed on-ready bluetooth-autoconnect "the daemon never finished its first pass"; stop daemon; return 1; }
  speaker off off
  $BB sleep "$OFF"
  from=$(size "$MONITOR") from_sinks=$(size "$SINKS") from_speaker=$(size "$LOGS/speaker.log")
  speaker on on
  on=$(speaker_stamp "$from_speaker" "speaker: on")
  if wait_for 120 "$SINKS" " bluez_output" "$from_sinks"; then
    record on-sink bluetooth-autoconnect "$on" "$(sink_stamp "$from_sinks")"
    record on-connect bluetooth-autoconnect "$on" "$(monitor_stamp "$from" "member=Connect")"
  else
    failed on-sink bluetooth-autoconnect "no sink after the speaker came back"
  fi
  stop daemon
  # exec → audible: the one pass, then fluidsynth.
  unlink || { failed exec-audible bluetooth-autoconnect+fluidsynth "could not unlink the speaker"; return 1; }
  speaker clear cleared
  from_speaker=$(size "$LOGS/speaker.log")
  launch autoconnect-fluidsynth bash -c '"$0" && exec "$@"' "$AUTOCONNECT" "${FLUIDSYNTH[@]}"
  local chain=$LAUNCHED
  if heard_audible "$from_speaker"; then
    record exec-audible bluetooth-autoconnect+fluidsynth "$(exec_stamp autoconnect-fluidsynth)" "$AUDIBLE" "$AUDIBLE_NOTE"
  else
    failed exec-audible bluetooth-autoconnect+fluidsynth "$AUDIBLE_NOTE"
  fi
  stop chain
  speaker idle idle
}

# -- the run --------------------------------------------------------------------------------
note "guest up, kernel $(uname -r), benchmarks: $RUNS runs, the speaker off ${OFF} s each time"
world_up() {
  start_bus || return 1
  start_bluetoothd || return 1
  btvirt_up || return 1
  launch_speaker
  start_backend || return 1
  # What reaches the speakerd under test and the alternatives, stamped (see the top).
  dbus-monitor --system "type='method_call',interface='org.bluez.Device1',member='Connect'" \
    "type='signal',interface='io.speakerd.Daemon1',member='ReadinessChanged'" \
    "type='method_call',interface='io.speakerd.Daemon1',member='Play'" >>"$MONITOR" 2>&1 &
  # A new sink's line gets its name: pipewire-pulse also makes a stand-in sink (auto_null)
  # whenever no other exists.
  pactl subscribe | while IFS= read -r line; do
    stamp=$EPOCHREALTIME name=
    [[ $line =~ "'new' on sink #"([0-9]+) ]] \
      && name=$(pactl list short sinks | $BB awk -v n="${BASH_REMATCH[1]}" '$1 == n { print $2 }')
    echo "$stamp $line${name:+ $name}"
  done >>"$SINKS" 2>&1 &
  wait_for 20 "$MONITOR" "member=NameLost" || return 1
  speaker_ready "$SPEAKER_FROM" 240 || return 1
  DEVICE=/org/bluez/hci0/dev_${SPEAKER_ADDRESS//:/_}
  # The speaker paired, trusted and remembered, as speakerd's first run leaves it (the
  # scenarios' config here: its scan is short), then speakerd stopped.
  start_speakerd || return 1
  bluetoothctl pairable on >/dev/null
  cli scan --json >"$LOGS/scan.json" && $BB grep -qi "$SPEAKER_ADDRESS" "$LOGS/scan.json" \
    || { echo "scan did not list $SPEAKER_ADDRESS"; return 1; }
  cli connect "$SPEAKER_ADDRESS" || return 1
  stop_speakerd
}
mkdir -p "$LOGS"
if ! world_up >"$LOGS/world-up.out" 2>&1; then
  note "the world did not come up: $($BB tail -3 "$LOGS/world-up.out" | $BB tr '\n' ' ')"
  exit 1
fi
# From here on, speakerd runs on its defaults (what its package installs), as a user's would.
: >/tmp/bench-speakerd.conf
SPEAKERD_CONF=/tmp/bench-speakerd.conf
: >"$OUT"
for ((RUN = 1; RUN <= RUNS; RUN++)); do
  # Interleaved: speakerd first in odd runs, the alternative first in even ones.
  if ((RUN % 2)); then order="speakerd alternative"; else order="alternative speakerd"; fi
  for block in $order; do
    note "run $RUN/$RUNS: $block"
    "${block}_block"
  done
done
note "benchmarks done"
