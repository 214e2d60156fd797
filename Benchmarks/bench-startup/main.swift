// bench-startup's RSS probe: the memory floor under speakerd's idle RSS.
//
// The start-up benchmark itself is `scripts/bench-startup` (it drives speakerd, the peers and the
// fake BlueZ as separate processes, which is what is measured). This executable is the control
// it compares speakerd's idle RSS against: a process that links the Daemon module exactly as speakerd
// does (the Swift runtime and FoundationEssentials static, Debian's shared libdbus and libbluetooth, no libFoundation
// or ICU; libfluidsynth is opened only on first use) but does no work, so "speakerd
// idle RSS - this" is what the daemon's own code and state cost. Like speakerd, it reads its
// file with the Daemon module's `TextFile`: importing Foundation here would link the full Foundation
// into the probe.
import DBus
import Glibc
import Daemon
import Configuration

/// VmRSS of this process in KiB, from /proc/self/status.
func residentKiB() -> Int? {
    guard let status = try? TextFile.read("/proc/self/status") else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }
    return nil
}

// Touch the Daemon module so that it is initialised as in speakerd, without doing any of its work.
let bus = BusAddress.system
withExtendedLifetime(bus) {}

guard let kib = residentKiB() else {
    _ = "bench-startup: cannot read VmRSS from /proc/self/status\n".withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(1)
}
print("\(kib) KiB VmRSS: idle Swift process linking the Daemon module")
