import AsyncSignals
import AudioPath
@testable import BlueZ
@testable import Daemon
import PlaybackService
import TestSupport
import Playback
import Testing
@testable import Configuration

@Suite("Configuration file and overrides")
struct ConfigurationTests {
    let parser = ConfigFileParser(path: "/etc/speakerd/speakerd.conf")

    @Test("an empty file gives the documented defaults")
    func emptyFileGivesDefaults() throws {
        let configuration = try parser.parse("")
        #expect(configuration == .defaults)
        #expect(configuration.playTimeout == .seconds(30))
        #expect(configuration.reconnectMax == .seconds(60))
        #expect(configuration.onSpeakerLost == .pause)
        #expect(configuration.audioOutput == .automatic)
        #expect(configuration.preRoll == .milliseconds(150))
        #expect(!configuration.keepAlive)
    }

    @Test("keep_alive takes silence and tone besides yes and no (yes: the inaudible bursts, as before)")
    func keepAliveSounds() throws {
        for (text, on, sound) in [("yes", true, KeepAliveSound.bursts), ("true", true, .bursts), ("no", false, .bursts),
                                  ("off", false, .bursts), ("silence", true, .silence), ("tone", true, .tone), ("Tone", true, .tone)] {
            let configuration = try parser.parse("keep_alive = \(text)\n")
            #expect(configuration.keepAlive == on, "\(text)")
            #expect(configuration.keepAliveSound == sound, "\(text)")
        }
    }

    @Test("pre_roll_ms takes 0 (off) to 2000 ms, keep_alive yes or no; other values say what is expected")
    func preRollAndKeepAlive() throws {
        let configuration = try parser.parse("pre_roll_ms = 0\nkeep_alive = yes\n")
        #expect(configuration.preRoll == .zero)
        #expect(configuration.keepAlive)
        #expect(try parser.parse("pre_roll_ms = 2000").preRoll == .seconds(2))
        for (text, problem) in [
            ("pre_roll_ms = 2001", "bad value '2001' for pre_roll_ms (expected a whole number from 0 to 2000)"),
            ("pre_roll_ms = 0.15", "bad value '0.15' for pre_roll_ms (expected a whole number from 0 to 2000)"),
            ("keep_alive = sometimes", "bad value 'sometimes' for keep_alive (expected yes, no, silence or tone)"),
        ] {
            #expect(throws: ConfigurationError.invalidLine(path: "/etc/speakerd/speakerd.conf", line: 1, problem: problem)) {
                try parser.parse(text)
            }
        }
    }

    @Test("the memory bounds are read in MiB and reach the player: the read budget in all and per client, the queue's songs and memory")
    func memoryBounds() throws {
        let defaults = try parser.parse("")
        #expect(defaults.readBudget == SongReadLimits(total: 64 << 20, perClient: 32 << 20))
        #expect(defaults.queueLimits == PlayQueueLimits(songs: 64, bytes: 128 << 20))
        let configuration = try parser.parse("read_budget_mib = 96\nread_budget_per_client_mib = 24\nmax_queued_songs = 8\nmax_queue_mib = 40\n")
        #expect(configuration.readBudget == SongReadLimits(total: 96 << 20, perClient: 24 << 20))
        #expect(configuration.queueLimits == PlayQueueLimits(songs: 8, bytes: 40 << 20))
        let settings = PlaybackServiceSettings(configuration)
        #expect(settings.readBudget == configuration.readBudget && settings.queueLimits == configuration.queueLimits)
        for (text, problem) in [
            ("read_budget_mib = 16", "bad value '16' for read_budget_mib (expected a whole number from 17 to 4096)"),
            ("read_budget_per_client_mib = lots", "bad value 'lots' for read_budget_per_client_mib (expected a whole number from 17 to 4096)"),
            ("max_queued_songs = 2000", "bad value '2000' for max_queued_songs (expected a whole number from 0 to 1024)"),
            ("max_queue_mib = 0", "bad value '0' for max_queue_mib (expected a whole number from 1 to 4096)"),
        ] {
            #expect(throws: ConfigurationError.invalidLine(path: "/etc/speakerd/speakerd.conf", line: 1, problem: problem)) {
                try parser.parse(text)
            }
        }
    }

    @Test("every key is read, with comments, quotes and blank lines around")
    func everyKeyIsRead() throws {
        let text = """
            # speakerd configuration
            adapter = hci1
            auto_pick = yes   # pick the strongest sink
            ; an ini-style comment
            play_timeout_seconds = 12.5

            audio_output = alsa:bluealsa:DEV=11:22:33:AA:BB:CC,PROFILE=a2dp
            soundfont = "/opt/sf2/My Font #2.sf2"
            on_speaker_lost = stop
            reconnect_max_seconds = 30
            scan_seconds = 8
            state_dir = /srv/speakerd
            bus = session
            """
        let configuration = try parser.parse(text)
        #expect(configuration.adapter == "hci1")
        #expect(configuration.autoPick)
        #expect(configuration.playTimeout == .milliseconds(12_500))
        #expect(configuration.audioOutput == .alsa(device: "bluealsa:DEV=11:22:33:AA:BB:CC,PROFILE=a2dp"))
        #expect(configuration.soundfont == "/opt/sf2/My Font #2.sf2")
        #expect(configuration.onSpeakerLost == .stop)
        #expect(configuration.reconnectMax == .seconds(30))
        #expect(configuration.scanDuration == .seconds(8))
        #expect(configuration.stateDirectory == "/srv/speakerd")
        #expect(configuration.bus == .session)
    }

    @Test("an unknown key names the file, the line and the known keys")
    func unknownKey() {
        let error = #expect(throws: ConfigurationError.self) {
            try parser.parse("adapter = hci0\nauto_pik = yes\n")
        }
        let text = error?.description ?? ""
        #expect(text.hasPrefix("/etc/speakerd/speakerd.conf:2: unknown key 'auto_pik'"))
        #expect(text.contains("auto_pick"))
        #expect(!text.contains("\n"))
    }

    @Test("bad values are rejected with file:line and what was expected", arguments: [
        ("on_speaker_lost = maybe", "expected pause or stop"),
        ("play_timeout_seconds = -3", "a number of seconds from 1 to 3600"),
        ("play_timeout_seconds = nan", "a number of seconds from 1 to 3600"),
        ("auto_pick = perhaps", "expected yes or no"),
        ("adapter = wlan0", "an adapter name such as hci0"),
        ("soundfont = relative.sf2", "an absolute path"),
        ("audio_output = speakers", "auto, alsa:DEVICE, pulseaudio, file:PATH or null"),
        ("bus = nowhere", "system, session or a D-Bus address"),
    ])
    func badValues(line: String, expected: String) {
        let error = #expect(throws: ConfigurationError.self) { try parser.parse("\n\(line)\n") }
        #expect(error?.description.hasPrefix("/etc/speakerd/speakerd.conf:2: bad value") == true)
        #expect(error?.description.contains(expected) == true)
    }

    @Test("a line without '=', an unterminated quote and a repeated key are errors")
    func syntaxErrors() {
        #expect(throws: ConfigurationError.invalidLine(
            path: "/etc/speakerd/speakerd.conf", line: 1, problem: "expected 'key = value', found 'auto_pick'")) {
            try parser.parse("auto_pick")
        }
        let quote = #expect(throws: ConfigurationError.self) { try parser.parse("soundfont = \"/a.sf2") }
        #expect(quote?.description == "/etc/speakerd/speakerd.conf:1: unterminated quoted value")
        let repeated = #expect(throws: ConfigurationError.self) { try parser.parse("scan_seconds = 5\nscan_seconds = 6") }
        #expect(repeated?.description == "/etc/speakerd/speakerd.conf:2: 'scan_seconds' is already set on line 1")
    }

    @Test("the sound-server keys and the audio-device grace are read from the config file; a bad value names what is expected")
    func soundServerKeys() throws {
        let parser = ConfigFileParser(path: "speakerd.conf")
        let read = try parser.parse("pulse_server = unix:/run/user/1000/pulse/native\nsound_server_user = root\naudio_device_grace_seconds = 9\n")
        #expect(read.soundServers == SoundServerLocation(configuredServer: "unix:/run/user/1000/pulse/native", user: "root"))
        #expect(read.audioDeviceGrace == .seconds(9))
        for (line, expected) in [
            ("sound_server_user = no-such-user-here", "an existing user name or numeric user id"),
            ("pulse_server = \"unix:/a unix:/b\"", "one sound server such as unix:/run/user/1000/pulse/native"),
            ("audio_device_grace_seconds = 0", "a number of seconds from 1 to 60"),
        ] {
            let error = #expect(throws: ConfigurationError.self) { try parser.parse(line) }
            #expect(error?.description.contains(expected) == true, "\(String(describing: error))")
            #expect(error?.description.hasPrefix("speakerd.conf:1:") == true, "\(String(describing: error))")
        }
    }

    @Test("flags override the environment, which overrides the file")
    func precedence() throws {
        let file = "state_dir = /from/file\nsoundfont = /from/file.sf2\nbus = session\n"
        let options = DaemonOptions(configPath: "/c.conf", bus: "unix:path=/tmp/test-bus", soundfont: "/flag.sf2")
        let configuration = try options.resolve(environment: ["STATE_DIRECTORY": "/var/lib/speakerd:/other"]) {
            (path: String) throws(FileReadError) -> String? in path == "/c.conf" ? file : nil
        }
        #expect(configuration.stateDirectory == "/var/lib/speakerd")
        #expect(configuration.soundfont == "/flag.sf2")
        #expect(configuration.bus == .address("unix:path=/tmp/test-bus"))
        let flagged = try DaemonOptions(configPath: "/c.conf", stateDirectory: "/flag/state")
            .resolve(environment: ["STATE_DIRECTORY": "/env"]) { (_: String) throws(FileReadError) -> String? in file }
        #expect(flagged.stateDirectory == "/flag/state")
    }

    @Test("a missing default config file is fine; a missing --config file is an error")
    func missingFiles() throws {
        let noFile: (String) throws(FileReadError) -> String? = { _ in nil }
        #expect(try DaemonOptions().resolve(environment: [:], readFile: noFile) == .defaults)
        #expect(throws: ConfigurationError.unreadable(path: "/nope.conf", reason: "no such file")) {
            try DaemonOptions(configPath: "/nope.conf").resolve(environment: [:], readFile: noFile)
        }
    }

    @Test("a real file on disk is read, and an unreadable one is reported")
    func realFile() throws {
        let directory = TemporaryDirectory()
        directory.write("scan_seconds = 4\n", to: "speakerd.conf")
        let configuration = try DaemonOptions(configPath: directory.path + "/speakerd.conf").resolve(environment: [:])
        #expect(configuration.scanDuration == .seconds(4))
        let error = #expect(throws: ConfigurationError.self) {
            try DaemonOptions(configPath: directory.path).resolve(environment: [:])
        }
        #expect(error?.description.hasPrefix("cannot read config file \(directory.path): ") == true)
    }

    @Test("bad flags are caught by validate() with the flag's name")
    func badFlags() {
        let error = #expect(throws: ConfigurationError.self) {
            try DaemonOptions(audioOutput: "speaker").validate()
        }
        #expect(error?.description == "--audio-output: bad value 'speaker' (expected auto, alsa:DEVICE, pulseaudio, file:PATH or null)")
        #expect(throws: ConfigurationError.self) { try DaemonOptions(stateDirectory: "relative").validate() }
        #expect(throws: Never.self) { try DaemonOptions(bus: "system", audioOutput: "file:/tmp/x.wav").validate() }
    }

    @Test("addresses from users are parsed in either case and nonsense is refused with a sentence")
    func addresses() throws {
        #expect(try BluetoothAddress("11:22:33:aa:bb:cc").description == "11:22:33:AA:BB:CC")
        for bad in ["", "11:22:33:AA:BB", "11:22:33:AA:BB:CG", "11-22-33-AA-BB-CC"] {
            let error = #expect(throws: BluetoothAddressError.self) { try BluetoothAddress(bad) }
            #expect(error?.description.hasPrefix("'\(bad)' is not a Bluetooth address") == true)
        }
    }
}
