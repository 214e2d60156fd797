import Foundation

/// Small measuring helpers: medians, this process's RSS, and timing a child process.
enum Measure {
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func seconds(_ duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    /// Resident set size of this process in KiB, from /proc/self/status (VmRSS).
    static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
        }
        return -1
    }

    /// Runs a program to completion with its output discarded; returns wall seconds and status.
    static func run(_ executable: String, _ arguments: [String]) throws -> (seconds: Double, status: Int32, stdout: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let start = ContinuousClock.now
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let elapsed = seconds(ContinuousClock.now - start)
        return (elapsed, process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    /// Length in seconds of a 16-bit WAV from its header (`fluidsynth -F` writes 44.1 kHz stereo).
    static func wavSeconds(_ path: String) -> Double {
        guard let handle = FileHandle(forReadingAtPath: path), let header = try? handle.read(upToCount: 44),
              header.count == 44 else { return 0 }
        try? handle.close()
        func u32(_ at: Int) -> Double { Double(UInt32(header[at]) | UInt32(header[at + 1]) << 8 | UInt32(header[at + 2]) << 16 | UInt32(header[at + 3]) << 24) }
        func u16(_ at: Int) -> Double { Double(UInt16(header[at]) | UInt16(header[at + 1]) << 8) }
        let byteRate = u32(28)
        let fileBytes = Double((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
        // Use the file size, not the data chunk size: some writers leave that field unpatched.
        return byteRate > 0 ? (fileBytes - 44) / byteRate : 0
    }
}
