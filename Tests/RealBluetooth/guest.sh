# The real-Bluetooth scenarios, run inside the guest by its init (one boot, one audio stack).
# Each scenario drives speakerd through composer-cli as a user would, against real bluetoothd,
# and ends with a song played; the speaker's recording of it is saved for the host to compare
# with speakerd's own rendering (scripts/real-bluetooth does that after the guest powers off).
#
# A scenario writes /results/STACK-NAME/outcome: "played SONG" when every step went as it
# should (the audio check is the host's), or "failed: STEP: WHY". Later scenarios build on the
# world earlier ones left (a paired speaker, a running speakerd); one that fails resets the world
# to the paired state, so a single failure does not take the rest with it.
set -uo pipefail
param() { $BB sed -n "s/.*realbt\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
BB=/bb/busybox
BACKEND=$(param backend)
SCENARIOS=$(param scenarios)
# REALBT_PROFILE=1 on the host: each PipeWire scenario also records the graph's every cycle
# (pw-profiler: driver, quantum, each node's timing and xruns) and the graph a second into each
# song (pw-dump), for finding where a dropout came from. Off in CI: it costs the guest CPU.
PROFILE=$(param profile)
. "$REALBT_REPO/Tests/RealBluetooth/world.sh"
SONGS=/results/songs

# -- steps ----------------------------------------------------------------------------------
FAILED=
# step NAME COMMAND...: runs one step of a scenario; the first that fails is the scenario's reason.
step() {
  [[ -z $FAILED ]] || return 1
  local name=$1; shift
  note "  $name"
  # In this shell, not a subshell: steps start processes whose pids the world keeps.
  if ! "$@" >/tmp/step.out 2>&1; then
    FAILED="$name: $($BB tail -3 /tmp/step.out | $BB tr '\n' ' ')"
    note "  FAILED $FAILED"
    return 1
  fi
  $BB sed 's/^/      /' /tmp/step.out
}

# play_song SONG: `composer-cli play --wait`, which returns once the song is over (or failed).
play_song() { graph_snapshot; cli play --wait "$SONGS/$1"; }

# graph_snapshot: with PROFILE, the PipeWire graph (pw-dump) two seconds from now, in the logs.
SNAPSHOTS=0
graph_snapshot() {
  [[ $PROFILE == 1 && $BACKEND == pipewire ]] || return 0
  SNAPSHOTS=$((SNAPSHOTS + 1))
  (sleep 2; pw-dump >"$LOGS/pw-dump-$SNAPSHOTS.json" 2>&1) &
}

PLAY=
# play_in_background SONG: the same, for a song that something will happen to while it plays.
play_in_background() {
  graph_snapshot
  cli play --wait "$SONGS/$1" >"$LOGS/play.out" 2>&1 &
  PLAY=$!
}
play_ended() {
  wait_gone 120 "$PLAY" || { echo "the song never ended"; return 1; }
  local status=0
  wait "$PLAY" || status=$?
  cat "$LOGS/play.out"
  return $status
}

# status_says KEY VALUE [SECONDS]: until `composer-cli status --json` has "KEY": VALUE, VALUE
# as JSON ('"paused"', 'false'): speakerd's own view of readiness, the link, the playback.
status_says() {
  local pattern="\"$1\" ?: ?$2" end=$((SECONDS + ${3:-40}))
  while ((SECONDS < end)); do
    [[ $(cli status --json 2>/dev/null) =~ $pattern ]] && return 0
    $BB usleep 300000
  done
  echo "status never said $1 $2:"; cli status
  return 1
}

# status_latency: `composer-cli status --json` now, in STATUS_JSON, and its playback latency in
# milliseconds in LATENCY_MS; fails when the status has none (nothing plays, or no output said).
STATUS_JSON= LATENCY_MS=
status_latency() {
  STATUS_JSON=$(cli status --json 2>&1)
  [[ $STATUS_JSON =~ \"latencyMs\"\ ?:\ ?([0-9]+) ]] || return 1
  LATENCY_MS=${BASH_REMATCH[1]}
}

# latency_counts_delay: on BlueALSA, while a song plays, `status --json`'s latency is FluidSynth's
# ALSA buffer (1024 frames: 21.3 ms at 48 kHz, 23.2 at 44.1) and the PCM's Delay behind it. The
# Delay moves while BlueALSA plays (15-40 ms seen here, as its own buffer fills) and speakerd reads
# it every 3 s, so it is checked with room: more than the buffer alone by at least 5 ms (BlueALSA
# says more than that here), and no more than the buffer, the Delay now and 40 ms.
latency_counts_delay() {
  local latency pcm delay
  status_latency || { echo "no latency in the status while the song plays: $STATUS_JSON"; return 1; }
  latency=$LATENCY_MS
  [[ $STATUS_JSON =~ (/org/bluealsa/[A-Za-z0-9_/]+) ]] || { echo "no BlueALSA PCM in the status: $STATUS_JSON"; return 1; }
  pcm=${BASH_REMATCH[1]}
  delay=$(dbus-send --system --print-reply=literal --dest=org.bluealsa "$pcm" org.freedesktop.DBus.Properties.Get \
    string:org.bluealsa.PCM1 string:Delay 2>&1 | $BB awk '{print $NF}')
  [[ $delay =~ ^[0-9]+$ ]] || { echo "BlueALSA's Delay of $pcm: $delay"; return 1; }
  echo "latency $latency ms; BlueALSA's Delay now $((delay / 10)) ms" | $BB tee -a "$LOGS/latency.txt"
  ((delay >= 50)) || { echo "BlueALSA's Delay is under 5 ms: nothing to tell the buffer alone from both"; return 1; }
  ((latency >= 24 + 5 && latency <= 24 + delay / 10 + 40)) \
    || { echo "status's latency is not the ALSA buffer (21-24 ms) and BlueALSA's Delay"; return 1; }
}

# trusted: BlueZ trusts the speaker (speakerd's `connect` trusts a speaker it pairs, so that the
# speaker's own connections, Hands-Free or a reconnect, are let in without asking an agent).
trusted() {
  bluetoothctl info "$SPEAKER_ADDRESS" >/tmp/info.out 2>&1
  $BB grep -q "Trusted: yes" /tmp/info.out || { echo "BlueZ does not trust $SPEAKER_ADDRESS:"; cat /tmp/info.out; return 1; }
}
# not_said FROM TEXT: speakerd's log has no TEXT past byte FROM.
not_said() {
  ! $BB tail -c +"$(($1 + 1))" "$LOGS/speakerd.log" | $BB grep -F "$2" || { echo "speakerd said it"; return 1; }
}
remembered() { $BB grep -rqi "$SPEAKER_ADDRESS" /var/lib/speakerd || { echo "no $SPEAKER_ADDRESS in speakerd's state"; return 1; }; }
scan_finds() { cli scan --json >"$LOGS/scan.json" && $BB grep -qi "$SPEAKER_ADDRESS" "$LOGS/scan.json" || { echo "scan did not list $SPEAKER_ADDRESS:"; cat "$LOGS/scan.json"; return 1; }; }
pairable() { bluetoothctl pairable on >/dev/null; }

# The bluetoothd side of "the link went": the speaker or bluetoothd logged its end.
speaker_lost() { wait_for 30 "$LOGS/speaker.log" "speaker: disconnected" "$1"; }

# -- scenarios ------------------------------------------------------------------------------
# a. First run: scan, connect (pairing with speakerd's agent), play; the speaker is remembered.
scenario_first_run() {
  local from
  step "pairable adapter" pairable
  step "scan finds the speaker" scan_finds
  from=$(size "$LOGS/speakerd.log")
  step "connect pairs, trusts and connects" cli connect "$SPEAKER_ADDRESS"
  step "the speaker is trusted" trusted
  step "play is heard" play_song short.mid
  # The speaker's path runs at 48 kHz here (SBC on both stacks): status says so, and songs render at it.
  step "status says the path's rate" status_says audioSampleRateHz 48000 10
  # The A2DP profile came with connect's own Connect, not 4 s later from the profile nudge.
  step "no profile had to be asked for" not_said "$from" "asking BlueZ for its A2DP profile"
  step "speaker remembered" remembered
  SONG=short.mid
}

# b. Regular boot with a known speaker: bluetoothd and speakerd start again with the pairing and
#    the state kept; speakerd connects by itself and play is heard.
scenario_known_speaker() {
  local from
  step "stop speakerd" stop_speakerd
  from=$(size "$LOGS/speaker.log")
  step "stop bluetoothd" stop_bluetoothd
  step "the link goes with it" speaker_lost "$from"
  from=$(size "$LOGS/bluetoothd.log")
  step "start bluetoothd" start_bluetoothd
  step "adapter back" adapter_ready "$from"
  step "audio stack registered again" wait_for 40 "$LOGS/bluetoothd.log" "Endpoint registered" "$from"
  step "start speakerd" start_speakerd
  step "speakerd connects by itself" status_says readiness '"playbackReady"' 60
  if [[ $BACKEND == bluealsa ]]; then
    from=$(size "$LOGS/speaker.log")
    play_in_background long.mid
    step "the song starts" heard_seconds 1 "$from"
    step "status's latency counts BlueALSA's delay" latency_counts_delay
    step "the song is heard to its end" play_ended
    SONG=long.mid
  else
    step "play is heard" play_song short.mid
    SONG=short.mid
  fi
}

# c1. The speaker switched off and on while idle: speakerd reconnects it, play is heard.
scenario_off_on_idle() {
  step "switch the speaker off" speaker off off
  step "speakerd sees it go" status_says connected false
  step "switch the speaker on" speaker on on
  step "play is heard" play_song short.mid
  SONG=short.mid
}

# c2. Switched off mid-song and on again: the song pauses and resumes; the whole song is heard.
scenario_off_on_mid_song() {
  local from; from=$(size "$LOGS/speaker.log")
  play_in_background long.mid
  step "the song starts" heard_seconds 2 "$from"
  from=$(size "$LOGS/speaker.log")
  step "switch the speaker off" speaker off off
  step "the song pauses" status_says state '"paused"'
  step "switch the speaker on" speaker on on
  step "the song resumes and ends" play_ended
  SONG=long.mid
}

# c3. A play given while the speaker is off waits, and is heard once it is switched on.
scenario_play_while_off() {
  step "switch the speaker off" speaker off off
  step "speakerd sees it go" status_says connected false
  play_in_background short.mid
  step "the song waits" status_says state '"waiting"'
  step "switch the speaker on" speaker on on
  step "the song plays and ends" play_ended
  SONG=short.mid
}

# d. bluetoothd restarted mid-song: the song pauses and resumes; the whole song is heard.
scenario_bluetoothd_restart() {
  local from; from=$(size "$LOGS/speaker.log")
  play_in_background long.mid
  step "the song starts" heard_seconds 2 "$from"
  step "stop bluetoothd" stop_bluetoothd
  from=$(size "$LOGS/bluetoothd.log")
  step "start bluetoothd" start_bluetoothd
  step "adapter back" adapter_ready "$from"
  step "the song resumes and ends" play_ended
  SONG=long.mid
}

# d2. The sound server speakerd's stream goes to frozen mid-song for 6 s (SIGSTOP, then SIGCONT:
#     pipewire-pulse, or BlueALSA), the speaker connected all along: the output stops taking
#     audio, speakerd opens a new stream once the server answers again, and the whole song is
#     heard. A PipeWire Bluetooth node that failed once under load left the output silent the
#     same way. Six seconds, as the output's watchdog sees a stall 3 to 4 s after the last pull
#     (it looks every second), with 2 s to spare on a loaded guest. (Freezing PipeWire's graph
#     alone stalls nothing: pipewire-pulse goes on taking the stream's audio into its own buffer.)
freeze_stack() {
  local pid=${BACKEND_PIDS[0]}
  [[ $BACKEND != pipewire ]] || pid=${BACKEND_PIDS[2]}
  kill -STOP "$pid" || return 1
  $BB sleep 6
  kill -CONT "$pid"
  echo "froze $($BB cat /proc/$pid/comm) ($pid) for 6 s"
}
scenario_sound_server_freeze() {
  local from; from=$(size "$LOGS/speaker.log")
  local said; said=$(size "$LOGS/speakerd.log")
  play_in_background long.mid
  step "the song starts" heard_seconds 2 "$from"
  step "freeze the sound server for 6 s" freeze_stack
  step "the song goes on and ends" play_ended
  step "speakerd said what it did" wait_for 5 "$LOGS/speakerd.log" "opening it again" "$said"
  SONG=long.mid
}

# e. The adapter gone and back (btvirt stopped and started: hci0 and the speaker's controller go
#    and come back, the speaker with its pairing kept): speakerd reconnects, play is heard.
scenario_adapter_back() {
  local from; from=$(size "$LOGS/bluetoothd.log")
  local heard_from; heard_from=$(size "$LOGS/speaker.log")
  local address=$SPEAKER_ADDRESS
  step "stop btvirt" stop_btvirt
  step "hci0 gone" wait_for 30 "$LOGS/bluetoothd.log" "Removing adapter /org/bluez/hci0" "$from"
  from=$(size "$LOGS/bluetoothd.log")
  step "start btvirt: the adapter is back" btvirt_up
  step "the speaker is back" speaker_ready "$heard_from"
  step "the speaker kept its address" test "$SPEAKER_ADDRESS" = "$address"
  step "speakerd reconnects" status_says readiness '"playbackReady"' 60
  step "play is heard" play_song short.mid
  SONG=short.mid
}

# f. A speaker that refuses pairing (forgotten on both sides, then asked to pair): `connect` fails
#    with one line that says pairing failed, status says the speaker did not pair (speakerd does
#    not page it again by itself), and nothing is remembered; once the speaker accepts,
#    `connect` pairs it and play is heard.
connect_refused() {
  local status=0
  cli connect "$SPEAKER_ADDRESS" >/tmp/connect.out 2>/tmp/connect.err || status=$?
  cat /tmp/connect.out /tmp/connect.err
  ((status != 0)) || { echo "connect succeeded although the speaker refused pairing"; return 1; }
  [[ $($BB wc -l </tmp/connect.err) -eq 1 ]] || { echo "connect's failure is not one line"; return 1; }
  $BB grep -qi "pairing" /tmp/connect.err || { echo "connect's failure does not say pairing failed"; return 1; }
}
forgotten() { ! $BB grep -rqi "$SPEAKER_ADDRESS" /var/lib/speakerd || { echo "$SPEAKER_ADDRESS is still in speakerd's state"; return 1; }; }
scenario_pairing_refused() {
  step "forget the speaker" cli forget "$SPEAKER_ADDRESS"
  step "the speaker forgets its pairing" speaker forget "forgot pairings"
  step "the speaker refuses pairing" speaker "refuse on" "refusing pairing: yes"
  step "pairable adapter" pairable
  step "scan finds the speaker" scan_finds
  step "connect fails, saying pairing failed" connect_refused
  step "status says it did not pair (not out of reach, nothing retried)" status_says code '"pairingRefused"' 10
  step "nothing remembered" forgotten
  step "the speaker accepts pairing" speaker "refuse off" "refusing pairing: no"
  step "connect pairs and connects" cli connect "$SPEAKER_ADDRESS"
  step "play is heard" play_song short.mid
  step "speaker remembered" remembered
  SONG=short.mid
}

# g1. A speaker that offers Hands-Free beside A2DP (most speakers with a microphone do), under real
#     WirePlumber: the sound server makes one card for it with an A2DP and a headset profile. The
#     card is put in the headset profile (as a phone call, or a policy that prefers headsets,
#     does): speakerd puts it back on A2DP by itself, status says it did, and the song is heard on
#     A2DP. The speaker offers Hands-Free from a fresh pairing (BlueZ reads the speaker's SDP
#     records when it pairs), and goes on offering it after the scenario.
CARD=
# within SECONDS CHECK...: CHECK every 0.3 s until it passes, or SECONDS have passed; what it
# said the last time is the step's output (its reason, when it never passed).
within() {
  local end=$((SECONDS + $1)); shift
  until "$@" >/tmp/within.out 2>&1; do
    ((SECONDS < end)) || { cat /tmp/within.out; return 1; }
    $BB usleep 300000
  done
  cat /tmp/within.out
}
# card_info: what `pactl list cards` says of the speaker's card, $CARD.
card_info() { pactl list cards 2>&1 | $BB sed -n "/Name: $CARD\$/,/^Card #/p"; }
card_offers_both() {
  CARD=bluez_card.${SPEAKER_ADDRESS//:/_}
  local profiles; profiles=$(card_info)
  [[ $profiles == *a2dp-sink* && $profiles == *headset-head-unit* ]] \
    || { echo "the card $CARD does not offer both A2DP and the headset profile:"; pactl list cards; return 1; }
  echo "$profiles" | $BB grep -E "^\s+(a2dp|headset|Active)"
}
card_profile_is() {
  local active; active=$(card_info | $BB sed -n 's/^\s*Active Profile: //p')
  [[ $active == $1* ]] || { echo "$CARD's active profile is '$active', not $1"; return 1; }
  echo "$CARD: active profile $active"
}
status_warns() {
  local json; json=$(cli status --json 2>&1)
  [[ $json == *"$1"* ]] || { echo "status does not warn '$1': $json"; return 1; }
  echo "$json" | $BB tr -d '\n' | $BB grep -o "\"warnings\"[^]]*]" || true
}
# pair_afresh: speakerd and the speaker forget each other, and `connect` pairs them again: BlueZ
# reads a speaker's SDP records (what it offers) when it pairs.
pair_afresh() {
  step "forget the speaker" cli forget "$SPEAKER_ADDRESS"
  step "the speaker forgets its pairing" speaker forget "forgot pairings"
  step "pairable adapter" pairable
  step "scan finds the speaker" scan_finds
  step "connect pairs and connects" cli connect "$SPEAKER_ADDRESS"
}
scenario_hfp_beside_a2dp() {
  local from
  step "the speaker offers Hands-Free" speaker "hfp on" "hands-free offered: yes"
  from=$(size "$LOGS/speaker.log")
  pair_afresh
  step "Hands-Free comes up beside A2DP" wait_for 60 "$LOGS/speaker.log" "speaker: hfp connected" "$from"
  step "the card offers A2DP and the headset profile" within 30 card_offers_both
  step "the card is put in the headset profile" pactl set-card-profile "$CARD" headset-head-unit
  step "speakerd puts it back on A2DP" within 30 card_profile_is a2dp-sink
  step "play is heard" play_song short.mid
  step "status says what speakerd did" status_warns "speakerd switched it to a2dp-sink"
  SONG=short.mid
}

# g3. A speaker that takes AVRCP absolute volume (most do): `composer-cli volume` reaches the
#     speaker itself (the sound server passes it on over AVRCP rather than scaling the samples),
#     and the speaker's own buttons reach speakerd: `composer-cli volume` reads the volume they
#     set (100 of 127: 79 %), and it is remembered for the speaker. The song is heard after both.
#     30 % is 38 of 127 (34-42 allowed): away from the speaker's own 64, which 50 % would equal (an
#     unchanged volume sends nothing). The volume is set while the speaker is idle and checked
#     once a song has played: PipeWire holds an AVRCP volume back until the A2DP stream starts
#     (BlueZ's transport Volume stays 64 until then); BlueALSA, which Debian runs with software
#     volume, sends it only once speakerd has switched the PCM to native volume (what BlueZ and
#     the sound stack said is in volume.txt in the world's logs).
# speaker_volume_between FROM LOW HIGH: the last volume the speaker took past byte FROM of its log.
speaker_volume_between() {
  local line volume=
  line=$($BB tail -c +"$(($1 + 1))" "$LOGS/speaker.log" | $BB grep -E '^speaker: volume [0-9]+$' | $BB tail -1)
  [[ $line =~ ([0-9]+)$ ]] && volume=${BASH_REMATCH[1]}
  [[ -n $volume ]] && ((volume >= $2 && volume <= $3)) \
    || { echo "the speaker's volume is ${volume:-never set} of 127, not $2-$3"; return 1; }
  echo "the speaker's volume: $volume of 127"
}
# volume_reads LOW HIGH: `composer-cli volume` reads the speaker's volume (its device's, now) in LOW-HIGH percent.
volume_reads() {
  local out; out=$(cli volume --json 2>&1)
  [[ $out =~ \"percent\"\ ?:\ ?([0-9]+) ]] || { echo "no volume: $out"; return 1; }
  ((BASH_REMATCH[1] >= $1 && BASH_REMATCH[1] <= $2)) || { echo "volume ${BASH_REMATCH[1]} %, not $1-$2: $out"; return 1; }
  echo "volume ${BASH_REMATCH[1]} %"
}
remembered_volume() {
  $BB grep -rq "\"volume\" *: *$1" /var/lib/speakerd || { echo "speakerd's state has no volume $1:"; cat /var/lib/speakerd/*.json; return 1; }
}
# transport_volume WHEN: what BlueZ says of the speaker's transports' Volume (AVRCP absolute volume,
# 0-127; no such property when BlueZ does not use it), in the logs, for finding where it stops.
transport_volume() {
  transport_probe Volume volume.txt "$1"
  { echo "$1: what the audio stack says:"
    if [[ $BACKEND == bluealsa ]]; then
      local pcm
      for pcm in $(busctl --system --list tree org.bluealsa 2>/dev/null | $BB grep -o '/org/bluealsa/[^ ]*/a2dpsrc/sink'); do
        echo "$pcm SoftVolume: $(busctl --system get-property org.bluealsa "$pcm" org.bluealsa.PCM1 SoftVolume 2>&1)"
        echo "$pcm Volume: $(busctl --system get-property org.bluealsa "$pcm" org.bluealsa.PCM1 Volume 2>&1)"
      done
    else
      pactl list sinks 2>&1 | $BB grep -E 'Name:|Flags:|^\s*Volume:|Active Port:|api.bluez5.*volume'
      pw-dump 2>&1 | $BB grep -E -A12 '"Route"|"save"|hw-volume' | $BB grep -E 'volume|Volume|"name"|mute|save' | $BB head -60
    fi
  } >>"$LOGS/volume.txt" 2>&1
}
scenario_avrcp_volume() {
  local from
  step "the speaker offers AVRCP" speaker "avrcp on" "avrcp offered: yes"
  pair_afresh
  from=$(size "$LOGS/speaker.log")
  transport_volume "before volume 30 %"
  step "volume 30 %" cli volume 30
  transport_volume "after volume 30 %"
  step "play is heard" play_song short.mid
  transport_volume "after the song"
  step "the speaker took it over AVRCP" within 20 speaker_volume_between "$from" 34 42
  step "the speaker's buttons set 100 of 127" speaker "volume 100" "volume 100 by the buttons"
  step "composer-cli volume reads the buttons' volume" volume_reads 78 80
  step "speakerd remembers it for the speaker" remembered_volume 79
  step "the speaker's recording starts afresh" speaker clear cleared
  step "play is heard" play_song short.mid
  SONG=short.mid
}

# g2. A speaker that reports its delay (AVDTP delay reporting, as most speakers sold now do): the
#     song's heard position is what the speaker plays, so status's latency counts that delay,
#     through BlueALSA's PCM Delay or the sound server's stream latency. The speaker reports 600 ms
#     while the song plays: far above either stack's own 20-150 ms, and above the 200 ms PipeWire
#     counts for an SBC speaker that has not reported (0.3.65 puts BlueZ's transport Delay, or that
#     guess, into its sink's latency; so a report of 250 ms moved its latency by only 50 ms). After
#     it, status's latency must be at least the 600 ms and have grown by at least 200 ms from what
#     it was a moment before (speakerd reads BlueALSA's Delay every 3 s, the server's latency at
#     each write); the song is heard to its end.
LATENCY=
latency_now() {
  # The stream's first timing report can trail the first heard second under TCG: give it 10 s.
  local end=$((SECONDS + 10))
  until status_latency; do
    ((SECONDS < end)) || { echo "no latency in the status while the song plays: $STATUS_JSON"; return 1; }
    $BB usleep 300000
  done
  LATENCY=$LATENCY_MS
  echo "latency $LATENCY ms before the report" | $BB tee -a "$LOGS/latency.txt"
}
# latency_probe WHEN: what BlueZ says of the speaker's delay beside speakerd's figure, in the
# logs: the transport's `Delay` (tenths of a millisecond; no such property before a report).
# Seconds under TCG (busctl walks BlueZ's tree), so only once the check is done: run while the
# song plays, it ate the time the check had.
latency_probe() { transport_probe Delay latency.txt "$1"; }
# transport_probe PROPERTY FILE WHEN: each of BlueZ's transports' PROPERTY, appended to FILE in the logs.
transport_probe() {
  local t
  for t in $(busctl --system --list tree org.bluez 2>/dev/null | $BB grep -o '/org/bluez/hci0/dev_[^ ]*/fd[0-9]*'); do
    echo "$3: BlueZ's $t $1: $(busctl --system get-property org.bluez "$t" org.bluez.MediaTransport1 "$1" 2>&1)"
  done >>"$LOGS/$2" 2>&1
}
latency_at_least() {
  local latency= end=$((SECONDS + 10))
  while ((SECONDS < end)); do
    status_latency && latency=$LATENCY_MS && ((latency >= $1)) && {
      echo "latency $latency ms after the report" | $BB tee -a "$LOGS/latency.txt"; latency_probe after; return 0; }
    $BB usleep 500000
  done
  latency_probe "after (failed)"
  echo "status's latency (${latency:-none} ms) did not reach $1 ms"
  return 1
}
scenario_delay_report() {
  local from; from=$(size "$LOGS/speaker.log")
  play_in_background long.mid
  step "the song starts" heard_seconds 1 "$from"
  step "status's latency before" latency_now
  step "the speaker reports 600 ms of delay" speaker "delay 600" "delay reported 600 ms"
  step "status's latency counts the speaker's delay" latency_at_least "$((LATENCY + 200 > 600 ? LATENCY + 200 : 600))"
  step "the song is heard to its end" play_ended
  step "the speaker reports no delay again" speaker "delay 0" "delay reported 0 ms"
  SONG=long.mid
}

# recover: after a failed scenario, back to the state the next one expects (every part running,
# the speaker on and connected, nothing playing), as far as it can be, within bounds.
recover() {
  note "recovering the world after a failed scenario"
  [[ -z $PLAY ]] || { kill "$PLAY" 2>/dev/null; wait "$PLAY" 2>/dev/null; PLAY=; }
  speaker on on >/dev/null
  speaker "delay 0"
  kill -0 "${BLUETOOTHD:-0}" 2>/dev/null || { local from; from=$(size "$LOGS/bluetoothd.log"); start_bluetoothd; adapter_ready "$from"; }
  kill -0 "${BTVIRT:-0}" 2>/dev/null || btvirt_up
  kill -0 "${SPEAKERD:-0}" 2>/dev/null || start_speakerd
  cli stop >/dev/null 2>&1
  cli connect "$SPEAKER_ADDRESS" >/dev/null 2>&1
  status_says readiness '"playbackReady"' 60 >/dev/null
}

# cpu_ticks: "NAME TICKS" for each of the world's processes (user + system time, in clock
# ticks), so that a scenario's cpu.txt says who was busy while it ran (starvation shows there).
cpu_ticks() {
  local entry var pid
  for entry in speakerd:SPEAKERD bluetoothd:BLUETOOTHD btvirt:BTVIRT speaker:SPEAKER; do
    var=${entry#*:}
    pid=${!var:-0}
    [[ -r /proc/$pid/stat ]] && echo "${entry%%:*} $($BB awk '{print $14 + $15}' /proc/$pid/stat)"
  done
  for pid in "${BACKEND_PIDS[@]}"; do
    [[ -r /proc/$pid/stat ]] && echo "$($BB awk '{gsub(/[()]/, "", $2); print $2, $14 + $15}' /proc/$pid/stat)"
  done
}

# -- the run --------------------------------------------------------------------------------
world_up() {
  start_bus || return 1
  LOGS=/results/$BACKEND-world && mkdir -p "$LOGS"
  start_bluetoothd || return 1
  btvirt_up || return 1
  launch_speaker
  start_backend || return 1
  start_speakerd || return 1
  speaker_ready "$SPEAKER_FROM" 240 || return 1
}

note "guest up, kernel $(uname -r), stack $BACKEND, scenarios $SCENARIOS"
if ! world_up; then
  note "the world did not come up"
  echo "failed: the world did not come up (logs in $LOGS)" >"/results/$BACKEND-world/outcome"
  exit 1
fi
# Every scenario's logs go into its own folder: the parts keep writing to the files they
# opened, so the world's logs are copied per scenario (from where it started) once it ends.
for name in ${SCENARIOS//,/ }; do
  dir=/results/$BACKEND-$name
  mkdir -p "$dir"
  FAILED= SONG=
  declare -A start=()
  for f in /results/$BACKEND-world/*.log; do start[$f]=$(size "$f"); done
  speaker clear cleared >/dev/null
  note "scenario $BACKEND-$name"
  t0=$SECONDS
  cpu_ticks >/tmp/cpu.before
  PROFILER=
  if [[ $PROFILE == 1 && $BACKEND == pipewire ]]; then
    pw-profiler -o "$dir/profiler.log" >/dev/null 2>&1 &
    PROFILER=$!
  fi
  "scenario_${name//-/_}"
  [[ -z $PROFILER ]] || { kill -INT "$PROFILER"; wait "$PROFILER" 2>/dev/null; $BB mv "$LOGS"/pw-dump-*.json "$dir/" 2>/dev/null; }
  [[ -n $FAILED ]] || step "save what the speaker heard" speaker "save $dir/heard.wav" "saved"
  for f in /results/$BACKEND-world/*.log; do $BB tail -c +"$((${start[$f]:-0} + 1))" "$f" >"$dir/$(basename "$f")"; done
  cli status >"$dir/status.txt" 2>&1
  # CPU seconds each process took during the scenario (a process restarted in it counts from 0).
  cpu_ticks | $BB awk -v took=$((SECONDS - t0)) 'NR == FNR { before[$1] = $2; next }
    { from = ($1 in before && before[$1] <= $2) ? before[$1] : 0; printf "%s %.2f s\n", $1, ($2 - from) / 100 } END { print "scenario", took, "s" }' /tmp/cpu.before - >"$dir/cpu.txt"
  if [[ -n $FAILED ]]; then
    echo "failed: $FAILED" >"$dir/outcome"
  else
    echo "played $SONG" >"$dir/outcome"
  fi
  note "scenario $BACKEND-$name: $(<"$dir/outcome") ($((SECONDS - t0)) s)"
  [[ -z $FAILED ]] || recover
  unset start
done
