#!/usr/bin/env python3
"""The real-Bluetooth world's speaker: an A2DP sink (SBC) on Bumble, driven by the tests.

It attaches to one of btvirt's emulated controllers (a `unix:` transport) and behaves as a
Bluetooth speaker would: discoverable and connectable, pairs without a PIN, takes an A2DP
stream and keeps every SBC frame it is sent. The tests steer it through a FIFO, one command a
line, and follow it through its log, one `speaker: EVENT` line per thing that happened:

  off            drop the link and stop answering pages and inquiries (switched off)
  on             answer them again (switched on)
  drop           drop the link, stay on (out of range for a moment)
  refuse on|off  refuse or accept pairing from now on
  forget         forget every pairing (a factory reset)
  save PATH      write what it heard so far, decoded, as a WAV file (sbcdec), then `saved PATH`
  clear          forget what it heard so far
  audible        when the first audible sample heard since `clear` arrived (for the benchmarks,
                 scripts/bench-real-bluetooth): `audible at STAMP ...`, or `audible none`
  idle           `idle` once no stream is started (at once if none is)
  delay MS       report MS milliseconds of delay to the source (AVDTP delay reporting), now if a
                 stream is configured and at each new configuration: `delay reported MS ms`
  volume N       its own volume buttons: set its volume to N (0-127, AVRCP's scale) and tell the
                 source (AVRCP volume changed): `volume N by the buttons`
  avrcp on|off   offer AVRCP absolute volume from now on, or stop: `avrcp offered: yes|no` (read, as
                 Hands-Free is, at the source's next SDP browse)
  hfp on|off     offer Hands-Free (HFP 1.x, CVSD) beside A2DP from now on, or stop offering it:
                 `hands-free offered: yes|no` (a source reads it at its next SDP browse: pairing)

Offering Hands-Free, it is the HF side of a real service level connection (`hfp connected`, once
the AT exchange is done): the sound server then has a headset profile for the speaker beside A2DP,
as it has for most speakers with a microphone. The source's audio gateway may open it (PipeWire
does, at times, once A2DP is up); if it has not within two seconds of A2DP, the speaker opens it,
as such speakers do.

It offers AVDTP delay reporting, as most speakers sold now do, and reports no delay until told.
Told `avrcp on`, it offers AVRCP absolute volume (an AVRCP 1.6 target, category 2, and a
controller, its buttons), as most speakers do; each volume the source sets is said, `volume N`
(0-127). Off by default: with it, PipeWire 0.3.65 takes the speaker's volume as the sink's (and
its initial 0 silenced the song), but sends no SetAbsoluteVolume for a sink volume set through
pipewire-pulse (the `avrcp-volume` scenario).

`on` and `audible` carry CLOCK_REALTIME stamps (time.time(), seconds), the clock the guest's
other processes stamp with too (bash's EPOCHREALTIME, dbus-monitor's time=).

Why a FIFO and log lines: the guest's scripts are bash, and both can be waited on without
polling a socket. The heard SBC goes to the guest's tmpfs, never the 9p results folder (a file
on 9p was never flushed in the feasibility run); `save` copies the decoded result out.
"""
from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import subprocess
import sys
import time
import wave

from bumble import avrcp
from bumble import hci as bumble_hci
from bumble import hfp
from bumble import rtp as bumble_rtp
from bumble.a2dp import (
    A2DP_SBC_CODEC_TYPE,
    SbcMediaCodecInformation,
    make_audio_sink_service_sdp_records,
)
from bumble.avdtp import (
    AVDTP_AUDIO_MEDIA_TYPE,
    AVDTP_DELAY_REPORTING_SERVICE_CATEGORY,
    DelayReport_Command,
    Listener,
    MediaCodecCapabilities,
    ServiceCapabilities,
)
from bumble.device import Device, DeviceConfiguration
from bumble.hci import HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.rfcomm import Client as RfcommClient
from bumble.rfcomm import Server as RfcommServer
from bumble.transport import open_transport


# Bumble formats every audio packet for its debug log, whatever the log level (f-strings), which
# under TCG cost more than the audio's own time: the speaker fell behind the stream and btvirt
# dropped what it could not deliver ("ACL continuation without start"). Those two are only ever
# formatted for the log, so they get a short form here.
bumble_hci.HCI_AclDataPacket.__str__ = lambda self: 'ACL'
bumble_rtp.MediaPacket.__str__ = lambda self: 'RTP'


def say(event: str) -> None:
    print(f'speaker: {event}', flush=True)


class Delegate(PairingDelegate):
    """Just Works pairing, unless the tests told the speaker to refuse."""

    def __init__(self, speaker: 'Speaker') -> None:
        super().__init__(io_capability=PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT)
        self.speaker = speaker

    async def accept(self) -> bool:
        return self.speaker.accept_pairing()

    async def confirm(self, auto: bool = False) -> bool:
        return self.speaker.accept_pairing()


class Volume(avrcp.Delegate):
    """AVRCP absolute volume, as a speaker's amplifier takes it."""

    def __init__(self) -> None:
        super().__init__(supported_events=[avrcp.EventId.VOLUME_CHANGED])
        self.volume = 64  # half way, as a speaker switched on is (0 would be silence)

    async def set_absolute_volume(self, volume: int) -> None:
        await super().set_absolute_volume(volume)
        say(f'volume {volume}')


class Speaker:
    def __init__(self, transport: str, name: str, control: str, heard: str, hfp: bool) -> None:
        self.transport = transport
        self.name = name
        self.control = control
        self.heard = heard
        self.keys = heard + '.keys.json'
        # When the last packet that was not silence came (`quiet`), and the last packet's frames:
        # digital silence encodes to the same SBC frames packet after packet, so a packet equal
        # to the one before is silence. PipeWire sends it to an idle sink until WirePlumber
        # suspends it (5 s on), which `quiet` need not wait for.
        self.last_audio = 0.0
        self.last_frames = b''
        self.hfp = hfp
        self.hfp_channel = 0  # the RFCOMM channel the Hands-Free record names, once serving
        self.hfp_link = None  # the connection Hands-Free was opened on (by either side)
        self.avrcp: avrcp.Protocol | None = None
        self.avrcp_offered = False
        self.refusing = False
        self.powered = True
        self.device: Device | None = None
        self.connection = None
        self.samples = 0
        # RTP bookkeeping, to tell where audio that never sounded went: a sequence number skipped
        # is a packet lost on the way (btvirt drops what a starved speaker cannot take); a
        # timestamp that jumps further than the last packet's samples is audio the sender skipped.
        self.next_sequence: int | None = None
        self.next_timestamp: int | None = None
        self.lost_packets = 0
        self.skipped_samples = 0
        # When each packet's audio arrived: (its first sample's index since `clear`, time.time()),
        # so that `audible` can say when the first audible sample reached the speaker.
        self.arrivals: list[tuple[int, float]] = []
        self.streaming = False
        self.stream_idle = asyncio.Event()
        self.stream_idle.set()
        # AVDTP delay reporting: the delay to report, in milliseconds (None: none yet), and the
        # sink endpoint whose stream it is reported for.
        self.delay_ms: int | None = None
        self.sink = None

    def accept_pairing(self) -> bool:
        say('pairing refused' if self.refusing else 'pairing accepted')
        return not self.refusing

    # -- what the source does to us ------------------------------------------------------
    def on_connection(self, connection) -> None:
        self.connection = connection
        say(f'connected {connection.peer_address.to_string(False)}')
        connection.on('disconnection', lambda reason: self.on_disconnection(connection, reason))

    def on_disconnection(self, connection, reason) -> None:
        if self.connection is connection:
            self.connection = None
        self.stream_ended()
        say(f'disconnected reason={reason}')

    def on_avdtp_connection(self, protocol) -> None:
        sink = protocol.add_sink(self.sbc_capabilities())
        # Offered beside the codec: the source then configures it, and takes our reports.
        sink.capabilities.append(ServiceCapabilities(AVDTP_DELAY_REPORTING_SERVICE_CATEGORY))
        self.sink = sink
        sink.on('configuration', self.on_stream_configured)
        sink.on('start', self.on_stream_start)
        sink.on('suspend', lambda: (self.stream_ended(), say('stream suspended')))
        sink.on('stop', lambda: (self.stream_ended(), say('stream stopped')))
        sink.on('rtp_packet', self.on_rtp_packet)
        say('avdtp connected')
        if self.hfp and self.connection is not None:
            asyncio.get_running_loop().create_task(self.open_hands_free(self.connection))

    def on_stream_configured(self) -> None:
        say('stream configured')
        if self.delay_ms is not None:
            # After the configuration's answer is on its way: a report is a command of ours.
            asyncio.get_running_loop().create_task(self.report_delay(after=0.05))

    async def report_delay(self, after: float = 0.0) -> None:
        """Sends the delay (AVDTP Delay Report, in tenths of a millisecond) for the configured
        stream, to the source's endpoint, if the source configured delay reporting."""
        await asyncio.sleep(after)
        sink, delay = self.sink, self.delay_ms
        stream = getattr(sink, 'stream', None)
        if sink is None or delay is None or stream is None:
            say('delay not reported: no stream configured')
            return
        categories = [c.service_category for c in sink.configuration]
        if AVDTP_DELAY_REPORTING_SERVICE_CATEGORY not in categories:
            say('delay not reported: the source did not configure delay reporting')
            return
        try:
            await sink.protocol.send_command(DelayReport_Command(acp_seid=stream.remote_endpoint.seid, delay=delay * 10))
            say(f'delay reported {delay} ms')
        except Exception as error:
            say(f'delay report failed: {error!r}')

    def on_stream_start(self) -> None:
        self.next_sequence = self.next_timestamp = None  # a new stream numbers afresh
        self.streaming = True
        self.stream_idle.clear()
        say('stream started')

    def stream_ended(self) -> None:
        self.streaming = False
        self.stream_idle.set()

    def on_rtp_packet(self, packet) -> None:
        # An SBC media payload: one header byte (fragmentation, frame count), then whole frames.
        payload = packet.payload
        if self.next_sequence is not None and packet.sequence_number != self.next_sequence:
            lost = (packet.sequence_number - self.next_sequence) & 0xFFFF
            self.lost_packets += lost
            say(f'lost {lost} packets')
        self.next_sequence = (packet.sequence_number + 1) & 0xFFFF
        if len(payload) < 3 or payload[0] & 0x80:
            return  # fragmented frames: never sent for SBC at these bitpools
        with open(self.heard, 'ab') as f:
            f.write(payload[1:])
        # The first frame's header says how many samples a frame holds and at what rate.
        header = payload[2]
        rate = (16000, 32000, 44100, 48000)[header >> 6]
        samples = (4, 8, 12, 16)[(header >> 4) & 3] * (8 if header & 1 else 4)
        before = self.samples
        if payload[1:] != self.last_frames:
            self.last_audio = asyncio.get_running_loop().time()
        self.last_frames = payload[1:]
        count = samples * (payload[0] & 0x0F)
        if self.next_timestamp is not None and packet.timestamp != self.next_timestamp:
            skipped = (packet.timestamp - self.next_timestamp) & 0xFFFFFFFF
            if skipped < rate * 60:  # not a wrap or a restart
                self.skipped_samples += skipped
                say(f'sender skipped {skipped} samples')
        self.next_timestamp = (packet.timestamp + count) & 0xFFFFFFFF
        self.arrivals.append((self.samples, time.time()))
        self.samples += count
        if before == 0:
            say('first audio')
        if self.samples // rate > before // rate:
            say(f'heard {self.samples // rate} s')

    @staticmethod
    def sbc_capabilities() -> MediaCodecCapabilities:
        info = SbcMediaCodecInformation
        return MediaCodecCapabilities(
            media_type=AVDTP_AUDIO_MEDIA_TYPE,
            media_codec_type=A2DP_SBC_CODEC_TYPE,
            media_codec_information=info(
                sampling_frequency=info.SamplingFrequency.SF_44100 | info.SamplingFrequency.SF_48000,
                # Mono at a modest bitpool: pitch and onsets survive it, and the speaker (Python
                # under TCG) keeps up with a third of the data a stereo stream at 53 would be.
                channel_mode=info.ChannelMode.MONO,
                block_length=info.BlockLength.BL_4 | info.BlockLength.BL_8
                | info.BlockLength.BL_12 | info.BlockLength.BL_16,
                subbands=info.Subbands.S_4 | info.Subbands.S_8,
                allocation_method=info.AllocationMethod.LOUDNESS | info.AllocationMethod.SNR,
                minimum_bitpool_value=2,
                maximum_bitpool_value=32,
            ),
        )

    HF_CONFIGURATION = hfp.HfConfiguration(
        supported_hf_features=[], supported_hf_indicators=[], supported_audio_codecs=[hfp.AudioCodec.CVSD])

    def sdp_records(self):
        records = {0x00010001: make_audio_sink_service_sdp_records(0x00010001)}
        if self.avrcp_offered:
            # A remote control's target taking absolute volume, and its controller (the buttons).
            records[0x00010003] = avrcp.TargetServiceSdpRecord(
                0x00010003, supported_features=avrcp.TargetFeatures.CATEGORY_2).to_service_attributes()
            records[0x00010004] = avrcp.ControllerServiceSdpRecord(0x00010004).to_service_attributes()
        if self.hfp:
            records[0x00010002] = hfp.make_hf_sdp_records(0x00010002, self.hfp_channel, self.HF_CONFIGURATION)
        return records

    def on_hfp_channel(self, dlc) -> None:
        """The audio gateway opened our Hands-Free channel."""
        if not self.hfp:
            say('hfp channel opened while not offered: closed')
            asyncio.get_running_loop().create_task(dlc.disconnect())
            return
        self.hfp_link = self.connection
        say('hfp channel opened by the source')
        self.run_hands_free(dlc)

    async def open_hands_free(self, connection, wait: float = 2.0) -> None:
        """Opens the source's audio gateway on `connection`, unless it opened Hands-Free itself
        within `wait` seconds, or the link went meanwhile."""
        await asyncio.sleep(wait)
        if connection is not self.connection or self.hfp_link is connection or not self.hfp:
            return
        try:
            found = await hfp.find_ag_sdp_record(connection)
            if found is None:
                say('hfp: the source offers no audio gateway')
                return
            multiplexer = await RfcommClient(connection).start()
            dlc = await multiplexer.open_dlc(found[0])
        except Exception as error:
            say(f'hfp: opening the source\'s audio gateway failed: {error!r}')
            return
        self.hfp_link = connection
        say('hfp channel opened by the speaker')
        self.run_hands_free(dlc)

    def run_hands_free(self, dlc) -> None:
        """The HF side of the service level connection on `dlc` (AT+BRSF, indicators, event
        reporting), then the gateway's unsolicited results until the channel closes."""
        protocol = hfp.HfProtocol(dlc, self.HF_CONFIGURATION)

        async def run() -> None:
            try:
                await protocol.initiate_slc()
            except Exception as error:
                say(f'hfp failed: {error!r}')
                return
            say('hfp connected')
            await protocol.run()  # until the channel closes
        asyncio.get_running_loop().create_task(run())

    # -- what the tests do to us ---------------------------------------------------------
    async def command(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        verb, args = words[0], words[1:]
        if verb == 'off':
            self.powered = False
            await self.device.set_discoverable(False)
            await self.device.set_connectable(False)
            await self.disconnect()
            say('off')
        elif verb == 'on':
            self.powered = True
            await self.device.set_discoverable(True)
            await self.device.set_connectable(True)
            say(f'on (at {time.time():.6f})')  # answering pages from here on
        elif verb == 'drop':
            await self.disconnect()
            say('dropped')
        elif verb == 'refuse':
            self.refusing = args[:1] == ['on']
            say(f'refusing pairing: {"yes" if self.refusing else "no"}')
        elif verb == 'forget':
            await self.device.keystore.delete_all()
            say('forgot pairings')
        elif verb == 'clear':
            open(self.heard, 'wb').close()
            self.samples = self.lost_packets = self.skipped_samples = 0
            self.arrivals = []
            say('cleared')
        elif verb == 'audible':
            say(self.first_audible())
        elif verb == 'delay':
            self.delay_ms = int(args[0])
            await self.report_delay()
        elif verb == 'volume':
            volume = max(0, min(127, int(args[0])))
            if self.avrcp is None:
                say('volume: no AVRCP')
                return
            self.avrcp.delegate.volume = volume
            self.avrcp.notify_volume_changed(volume)
            say(f'volume {volume} by the buttons')
        elif verb == 'avrcp':
            self.avrcp_offered = args[:1] == ['on']
            if self.device is not None:
                self.device.sdp_service_records = self.sdp_records()
            say(f'avrcp offered: {"yes" if self.avrcp_offered else "no"}')
        elif verb == 'hfp':
            self.hfp = args[:1] == ['on']
            if self.device is not None:
                self.device.sdp_service_records = self.sdp_records()
            say(f'hands-free offered: {"yes" if self.hfp else "no"}')
        elif verb == 'idle':
            # Apart from the commands that follow, which a stream that never ends would block.
            asyncio.get_running_loop().create_task(self.say_when_idle())
        elif verb == 'save':
            await self.quiet()
            self.save(args[0])
            say(f'saved {args[0]} (packets lost on the way: {self.lost_packets}; samples the sender skipped: {self.skipped_samples})')
        else:
            say(f'unknown command {line!r}')

    async def say_when_idle(self) -> None:
        await self.stream_idle.wait()
        say('idle')

    async def quiet(self, seconds: float = 1.5, limit: float = 20.0) -> None:
        """Until no audio but silence has come for `seconds`: a song that ended at the source is
        still on its way here (the sound server's buffer, the link), and its last notes count."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while loop.time() < end and loop.time() - self.last_audio < seconds:
            await asyncio.sleep(0.1)

    async def disconnect(self) -> None:
        connection = self.connection
        if connection is not None:
            try:
                await connection.disconnect(HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR)
            except Exception as error:  # already gone: that is what we wanted
                say(f'disconnect: {error}')

    def first_audible(self, threshold: int = 33) -> str:
        """When the packet holding the first sample above -60 dBFS (33 of 32768) since `clear`
        arrived. The SBC heard so far is decoded whole (sbcdec): cheap for the second or two a
        benchmark waits for, and nothing is decoded while the audio streams in."""
        pcm, rate, channels = self.decode()
        samples = memoryview(pcm).cast('h')
        first = next((i for i, x in enumerate(samples) if x > threshold or x < -threshold), None)
        if first is None:
            return f'audible none ({len(samples) // max(channels, 1)} samples heard)'
        index = first // channels
        starts = [start for start, _ in self.arrivals]
        packet = max(bisect.bisect_right(starts, index) - 1, 0)
        stamp = self.arrivals[packet][1]
        return (f'audible at {stamp:.6f} (sample {index} at {rate} Hz, '
                f'{(stamp - self.arrivals[0][1]) * 1000:.1f} ms after the first audio)')

    def decode(self) -> tuple[bytes, int, int]:
        """What was heard since `clear`, decoded (sbcdec writes Sun .au, 16-bit big-endian):
        little-endian PCM, its rate and channel count."""
        au = self.heard + '.au'
        if os.path.getsize(self.heard) == 0:
            return b'', 44100, 2
        subprocess.run(['sbcdec', '-f', au, self.heard], check=True, stdout=subprocess.DEVNULL)
        with open(au, 'rb') as f:
            data = f.read()
        offset, _, _, rate, channels = (int.from_bytes(data[i:i + 4], 'big') for i in range(4, 24, 4))
        raw = bytearray(data[offset:])
        raw[0::2], raw[1::2] = raw[1::2], raw[0::2]  # big- to little-endian samples
        return bytes(raw), rate, channels

    def save(self, path: str) -> None:
        """Writes what was heard, decoded, into a WAV file."""
        pcm, rate, channels = self.decode()
        with wave.open(path, 'wb') as w:
            w.setnchannels(channels)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(pcm)

    async def read_commands(self) -> None:
        if not os.path.exists(self.control):
            os.mkfifo(self.control)
        # Opened read-write so that it never sees end-of-file between two writers.
        reader = os.fdopen(os.open(self.control, os.O_RDWR | os.O_NONBLOCK), 'rb', buffering=0)
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str] = asyncio.Queue()
        buffer = b''

        def readable() -> None:
            nonlocal buffer
            buffer += reader.read() or b''
            while b'\n' in buffer:
                line, buffer = buffer.split(b'\n', 1)
                lines.put_nowait(line.decode())

        loop.add_reader(reader.fileno(), readable)
        while True:
            line = await lines.get()
            try:
                await self.command(line)
            except Exception as error:
                say(f'command {line!r} failed: {error!r}')

    async def run(self) -> None:
        """Serves on the controller at the transport; when it goes (btvirt stopped), waits for a
        new one there and serves again: the program, its imports and its pairings stay, as a
        speaker's memory does when its Bluetooth chip resets. Starting Python again takes far
        longer under TCG than any scenario should wait."""
        open(self.heard, 'wb').close()
        commands = asyncio.create_task(self.read_commands())
        path = self.transport.split(':', 1)[1] if self.transport.startswith('unix:') else None
        while True:
            await self.serve()
            say('controller gone')
            self.device, self.connection = None, None
            while path and not os.path.exists(path):
                await asyncio.sleep(0.1)
            if not path:
                break
        commands.cancel()

    async def serve(self) -> None:
        try:
            async with await open_transport(self.transport) as (source, sink):
                config = DeviceConfiguration()
                config.name = self.name
                config.class_of_device = 0x240414  # audio, loudspeaker
                config.classic_enabled = True
                config.le_enabled = False
                # Pairings outlive the controller (it keeps its address when btvirt starts
                # again in the same order): kept on the guest's tmpfs.
                config.keystore = f'JsonKeyStore:{self.keys}'
                self.device = Device.from_config_with_hci(config, source, sink)
                self.device.pairing_config_factory = lambda connection: PairingConfig(
                    sc=True, mitm=False, bonding=True, delegate=Delegate(self))
                # Always served, offered in SDP only while `hfp` is on.
                self.hfp_channel = RfcommServer(self.device).listen(self.on_hfp_channel)
                self.device.sdp_service_records = self.sdp_records()
                self.avrcp = avrcp.Protocol(Volume())
                self.avrcp.listen(self.device)
                self.device.on('connection', self.on_connection)
                Listener.for_device(self.device).on('connection', self.on_avdtp_connection)
                await self.device.power_on()
                await self.device.set_discoverable(self.powered)
                await self.device.set_connectable(self.powered)
                say(f'ready {self.device.public_address.to_string(False)}')
                await source.terminated
        except (ConnectionError, OSError) as error:
            say(f'transport: {error!r}')
            await asyncio.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--name', default='RealBT Speaker')
    parser.add_argument('--control', default='/tmp/speaker.ctl')
    parser.add_argument('--heard', default='/tmp/speaker.sbc')
    parser.add_argument('--hfp', action='store_true', help='offer Hands-Free beside A2DP')
    parser.add_argument('transport', help='for example unix:/tmp/bt-server-bredrle')
    arguments = parser.parse_args()
    speaker = Speaker(arguments.transport, arguments.name, arguments.control, arguments.heard, arguments.hfp)
    try:
        asyncio.run(speaker.run())
    except KeyboardInterrupt:
        pass
    say('exited')


if __name__ == '__main__':
    sys.exit(main())
