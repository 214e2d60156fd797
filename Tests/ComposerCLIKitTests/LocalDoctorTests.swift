@testable import ComposerCLIKit
@testable import DBus
import Foundation
@testable import Playback
import TestSupport
import Testing
import Configuration

@Suite("composer-cli doctor's local checks")
struct LocalDoctorTests {
    static let sf2Header: [UInt8] = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("sfbk".utf8)

    func probes(files: [String: String] = [:], header: [UInt8]? = sf2Header,
                kernel: KernelBluetoothFinding = .controllers(["hci0"]), bus: String? = nil,
                stateDirectory: String? = nil) -> LocalDoctor.Probes {
        LocalDoctor.Probes(
            readFile: { (path: String) throws(FileReadError) -> String? in files[path] },
            fileHeader: { _ in header },
            kernelBluetooth: { kernel },
            reachBus: { _ in bus },
            stateDirectoryProblem: { _ in stateDirectory })
    }

    @Test("a state directory speakerd cannot write is a problem: speakers would not be remembered, and it says how to fix it")
    func unwritableStateDirectory() {
        let report = LocalDoctor(options: DaemonOptions(stateDirectory: "/s"), environment: [:],
                                 probes: probes(stateDirectory: "/s cannot be written (read-only file system); make it writable by the speakerd user, or check that its file system is not read-only")).run()
        #expect(outcome(report, "state") == .problem)
        #expect(report.checks.first { $0.name == "state" }?.detail
                == "speakers will not be remembered: /s cannot be written (read-only file system); make it writable by the speakerd user, or check that its file system is not read-only")
    }

    @Test("the real state-directory probe: a file in its place is a problem, a writable directory or none yet is fine")
    func stateDirectoryProbe() throws {
        let directory = TemporaryDirectory()
        #expect(LocalProbes.stateDirectoryProblem(directory.path) == nil)
        #expect(LocalProbes.stateDirectoryProblem(directory.path + "/not-yet") == nil)
        directory.write("x", to: "file")
        #expect(LocalProbes.stateDirectoryProblem(directory.path + "/file")
                == "\(directory.path)/file is not a directory; remove it (systemd's StateDirectory= recreates it)")
    }

    func outcome(_ report: DoctorReport, _ name: String) -> DoctorReport.Outcome? {
        report.checks.first { $0.name == name }?.outcome
    }

    @Test("a healthy machine passes every check")
    func healthyMachine() {
        let state = "{\"version\":1,\"speakers\":[{\"address\":\"11:22:33:AA:BB:CC\",\"name\":\"JBL Flip 5\",\"firstConnected\":\"2027-01-15T08:00:00Z\",\"lastConnected\":\"2027-01-15T08:00:00Z\"}]}"
        let report = LocalDoctor(options: DaemonOptions(), environment: [:], probes: probes(files: [
            "/etc/speakerd/speakerd.conf": "auto_pick = yes\n",
            "/var/lib/speakerd/state.json": state,
        ])).run()
        #expect(report.healthy)
        #expect(report.checks.map(\.name) == ["config", "state", "soundfont", "kernel bluetooth", "bus"])
        #expect(report.checks.allSatisfy { $0.outcome == .ok })
        #expect(report.checks[1].detail == "1 known speaker(s): JBL Flip 5")
        #expect(report.checks[4].detail == "system bus at unix:path=/run/dbus/system_bus_socket")
    }

    @Test("a config error is a problem that names file and line")
    func badConfig() {
        let report = LocalDoctor(options: DaemonOptions(configPath: "/c.conf"), environment: [:],
                                 probes: probes(files: ["/c.conf": "speed = 11\n"])).run()
        #expect(outcome(report, "config") == .problem)
        #expect(report.checks[0].detail.hasPrefix("/c.conf:1: unknown key 'speed'"))
    }

    @Test("a corrupt state file is a warning that says speakerd will start fresh")
    func corruptState() {
        let report = LocalDoctor(options: DaemonOptions(stateDirectory: "/s"), environment: [:],
                                 probes: probes(files: ["/s/state.json": "garbage"])).run()
        #expect(outcome(report, "state") == .warning)
        #expect(report.checks[1].detail.contains("set it aside"))
        #expect(report.healthy)
    }

    @Test("a missing or wrong soundfont, no kernel Bluetooth and no bus are problems")
    func problems() {
        let missing = LocalDoctor(options: DaemonOptions(), environment: [:],
                                  probes: probes(header: nil, kernel: .unsupported, bus: "Connection refused")).run()
        #expect(outcome(missing, "soundfont") == .problem)
        #expect(outcome(missing, "kernel bluetooth") == .problem)
        #expect(outcome(missing, "bus") == .problem)
        #expect(!missing.healthy)
        let notSF2 = LocalDoctor(options: DaemonOptions(), environment: [:], probes: probes(header: Array("MThd".utf8))).run()
        #expect(notSF2.checks[2].detail.hasSuffix("is not a SoundFont 2 (.sf2) file"))
        let noAdapter = LocalDoctor(options: DaemonOptions(), environment: [:], probes: probes(kernel: .noControllers)).run()
        #expect(noAdapter.checks[3].detail.contains("no adapter is present"))
    }

    @Test("the system bus address honours DBUS_SYSTEM_BUS_ADDRESS")
    func systemBusAddressFromEnvironment() {
        let report = LocalDoctor(options: DaemonOptions(), environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/tmp/b"],
                                 probes: probes()).run()
        #expect(report.checks[4].detail == "system bus at unix:path=/tmp/b")
    }

    @Test("a bus given as an address is named once: 'bus at ADDRESS'")
    func busGivenAsAnAddress() {
        let report = LocalDoctor(options: DaemonOptions(bus: "unix:path=/tmp/b"), environment: [:], probes: probes()).run()
        #expect(report.checks[4].detail == "bus at unix:path=/tmp/b")
    }

    @Test("the real bus probe reports a missing socket and reaches a listening one")
    func realBusProbe() {
        let directory = TemporaryDirectory()
        #expect(LocalProbes.reachBus("unix:path=\(directory.path)/none") == "No such file or directory")
        #expect(LocalProbes.reachBus("tcp:host=localhost,port=1") == "no unix:path= or unix:abstract= transport in the address")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        #expect(bindUnixSocket(fd, to: directory.path + "/bus") == 0)
        #expect(listen(fd, 1) == 0)
        #expect(LocalProbes.reachBus("unix:path=\(directory.path)/bus") == nil)
    }
}
