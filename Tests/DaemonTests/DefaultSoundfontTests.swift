@testable import AudioPath
import Foundation
@testable import Playback
@testable import PlaybackService
@testable import Daemon
import TestSupport
import Testing
@testable import Configuration

/// The soundfont speakerd loads when nobody says otherwise, and the shipped speakerd.conf that
/// documents it.
@Suite("Default soundfont and the documented defaults")
struct DefaultSoundfontTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized

    func repositoryFile(_ path: String) throws -> String {
        try String(contentsOf: Self.repository.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("the default is TimGM6mb, the font scripts/setup installs, not the default-GM alternatives link")
    func defaultIsTimGM6mb() throws {
        #expect(DaemonConfiguration.defaults.soundfont == "/usr/share/sounds/sf2/TimGM6mb.sf2")
        #expect(DaemonConfiguration.defaults.soundfont == SoundFont.defaultPath)
        #expect(try repositoryFile("scripts/setup").contains("timgm6mb-soundfont"))
        // The package scripts/setup installs really puts the default there.
        #expect(FileManager.default.isReadableFile(atPath: DaemonConfiguration.defaultSoundfont))
    }

    @Test("every commented-out key in systemd/speakerd.conf shows the built-in default")
    func shippedConfigDocumentsTheDefaults() throws {
        let lines = try repositoryFile("systemd/speakerd.conf").split(separator: "\n", omittingEmptySubsequences: false)
        // "#key = value" lines are the documented settings; "# prose" lines are comments.
        let settings = lines.filter { $0.hasPrefix("#") && !$0.hasPrefix("# ") && $0.contains("=") }.map { $0.dropFirst() }
        #expect(Set(settings.map { String($0.split(separator: "=")[0]).trimmingCharacters(in: .whitespaces) })
                == Set(ConfigFileParser.knownKeys))
        var documented = try ConfigFileParser(path: "speakerd.conf").parse(settings.joined(separator: "\n"))
        // `adapter = hci0` is an example: its default is "none given" (the first adapter BlueZ reports).
        #expect(documented.adapter == "hci0")
        documented.adapter = nil
        // So are the sound server's place and user: by default speakerd looks where libpulse would.
        #expect(documented.soundServers == SoundServerLocation(configuredServer: "unix:/run/user/1000/pulse/native", user: "1000"))
        documented.soundServers = SoundServerLocation()
        #expect(documented == .defaults)
    }

    @Test("a missing default soundfont fails the load with one line that says what to install")
    func missingSoundfontSaysWhatToInstall() async throws {
        let directory = TemporaryDirectory()
        let missing = directory.path + "/TimGM6mb.sf2"
        let error = await #expect(throws: SoundFontError.self) {
            _ = try await SoundFontCache(defaultPath: missing).load()
        }
        #expect(error == .missing(path: missing))
        #expect(error?.description == "soundfont \(missing) not found; install timgm6mb-soundfont or pass --soundfont FILE")
    }
}
