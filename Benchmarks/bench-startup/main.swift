// NOT WORKING YET: started from here, scripts/fake-bluez never gets the mock up (the run hangs
// waiting for the bus address), so no figures are recorded in docs/BENCHMARKS.md. The
// measuring logic below is what the benchmark should do once the harness start is fixed.
//
// bench-startup: exec → BlueZ `Connect` call and exec → READY=1 for speakerd on the fake BlueZ,
// beside `bluetoothctl connect` (exec → Connect) against the same fake, in one run.
//
//   swift build -c release --product bench-startup --product speakerd && .build/release/bench-startup 9
//
// The Connect call's time is read from `dbus-monitor --profile` on the private bus (its own
// timestamps, CLOCK_REALTIME), READY=1 from a notify socket bound here. bluetooth-autoconnect
// (PyPI 1.2.0) is not measured yet: it needs dbus-next installed, which the project does not set up.
import Foundation
import SpeakerCore

let runs = CommandLine.arguments.count > 1 ? max(1, Int(CommandLine.arguments[1]) ?? 9) : 9
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path
let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
let speaker = "11:22:33:AA:BB:CC"

func now() -> Double { Date().timeIntervalSince1970 }

@discardableResult
func shell(_ command: String, environment: [String: String] = [:]) -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = ["-c", command]
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try? process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

// The fake world: a private bus with the bluez5 mock, one adapter, one speaker.
let world = Process()
world.executableURL = URL(fileURLWithPath: root + "/scripts/fake-bluez")
let worldIn = Pipe(), worldOut = Pipe()
world.standardInput = worldIn
world.standardOutput = worldOut
try world.run()
var addressBytes = Data()
while !addressBytes.contains(0x0A) { addressBytes.append(worldOut.fileHandleForReading.availableData) }
let bus = String(decoding: addressBytes, as: UTF8.self).split(separator: "\n")[0].description
let send = "dbus-send --bus='\(bus)' --print-reply --dest=org.bluez"
shell("\(send) /org/bluez org.bluez.Mock.AddAdapter string:hci0 string:box")
shell("\(send) /org/bluez org.bluez.Mock.AddDevice string:hci0 string:\(speaker) string:Flip")
let devicePath = "/org/bluez/hci0/dev_" + speaker.replacingOccurrences(of: ":", with: "_")

/// Runs `command` with dbus-monitor watching; returns seconds from exec to the Connect call.
func connectDelay(_ command: [String], environment: [String: String], notifySocket: String? = nil) -> (connect: Double?, ready: Double?) {
    shell("\(send) \(devicePath) org.bluez.Device1.Disconnect")
    let monitorFile = NSTemporaryDirectory() + "bench-monitor-\(getpid())"
    let monitor = Process()
    monitor.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
    monitor.arguments = ["--address", bus, "--profile", "type='method_call',member='Connect'"]
    FileManager.default.createFile(atPath: monitorFile, contents: nil)
    monitor.standardOutput = FileHandle(forWritingAtPath: monitorFile)
    try? monitor.run()
    Thread.sleep(forTimeInterval: 0.3)  // let the monitor become a monitor before we start
    var readyAt: Double?
    var listener: Int32 = -1
    if let notifySocket {
        unlink(notifySocket)
        listener = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in notifySocket.utf8.enumerated() { raw[i] = b } }
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    let start = now()
    try? process.run()
    if listener >= 0 {
        var buffer = [UInt8](repeating: 0, count: 512)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while readyAt == nil {
            let count = buffer.withUnsafeMutableBytes { recv(listener, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            if String(decoding: buffer[0..<count], as: UTF8.self).contains("READY=1") { readyAt = now() - start }
        }
        close(listener)
    }
    Thread.sleep(forTimeInterval: 1.0)
    if process.isRunning { process.terminate() }
    process.waitUntilExit()
    monitor.terminate()
    monitor.waitUntilExit()
    let lines = (try? String(contentsOfFile: monitorFile, encoding: .utf8)) ?? ""
    let connectAt = lines.split(separator: "\n").first { $0.hasPrefix("mc") && $0.hasSuffix("Connect") }
        .flatMap { Double($0.split(separator: "\t")[1]) }
    return (connectAt.map { $0 - start }, readyAt)
}

func median(_ values: [Double]) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

var speakerdConnect: [Double] = [], speakerdReady: [Double] = [], bluetoothctlConnect: [Double] = []
let stateDir = NSTemporaryDirectory() + "bench-startup-state-\(getpid())"
for _ in 0..<runs {
    try? FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
    try? """
        {"version":1,"speakers":[{"address":"\(speaker)","name":"Flip","firstConnected":"2027-01-15T08:00:00Z","lastConnected":"2027-01-15T08:00:00Z"}]}
        """.write(toFile: stateDir + "/state.json", atomically: true, encoding: .utf8)
    let notify = stateDir + "/notify"
    let daemon = connectDelay([products + "/speakerd", "--bus", bus, "--state-dir", stateDir, "--audio-output", "null"],
                              environment: ["NOTIFY_SOCKET": notify], notifySocket: notify)
    if let connect = daemon.connect { speakerdConnect.append(connect) }
    if let ready = daemon.ready { speakerdReady.append(ready) }
    let ctl = connectDelay(["/usr/bin/bluetoothctl", "connect", speaker], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus])
    if let connect = ctl.connect { bluetoothctlConnect.append(connect) }
}
try? worldIn.fileHandleForWriting.close()

func ms(_ value: Double?) -> String { value.map { String(format: "%.1f ms", $0 * 1000) } ?? "n/a" }
let ratio = (median(bluetoothctlConnect) ?? 0) / max(median(speakerdConnect) ?? 1, 1e-9)
print("""
    | exec → (median of \(runs)) | speakerd | bluetoothctl connect |
    | --- | --- | --- |
    | BlueZ `Connect` call | \(ms(median(speakerdConnect))) | \(ms(median(bluetoothctlConnect))) |
    | READY=1 | \(ms(median(speakerdReady))) | — |

    bluetoothctl / speakerd (Connect): \(String(format: "%.2f", ratio))×
    """)
