import Foundation
import Testing

/// The jazz-soft MIDI test corpus shared by all worktrees: `<worktree>/../shared/corpus/jazz-soft-midi`,
/// or `$SPEAKERD_MIDI_CORPUS` when set. A missing corpus is a failure, never a silent pass.
enum Corpus {
    static var directory: URL {
        if let override = ProcessInfo.processInfo.environment["SPEAKERD_MIDI_CORPUS"], !override.isEmpty {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        // #filePath is <worktree>/Tests/MIDITests/Corpus.swift.
        let worktree = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return worktree.deletingLastPathComponent().appendingPathComponent("shared/corpus/jazz-soft-midi", isDirectory: true)
    }

    /// Every file name in the corpus, sorted; records a failure and returns [] when it is missing.
    static func fileNames(sourceLocation: SourceLocation = #_sourceLocation) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path), !names.isEmpty else {
            Issue.record("MIDI corpus not found at \(directory.path): check out the shared corpus there or set SPEAKERD_MIDI_CORPUS",
                         sourceLocation: sourceLocation)
            return []
        }
        return names.filter { !$0.hasPrefix(".") }.sorted()
    }

    /// The bytes of one corpus file; records a failure and returns nil when it cannot be read.
    static func bytes(of name: String, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) else {
            Issue.record("cannot read corpus file \(name) in \(directory.path)", sourceLocation: sourceLocation)
            return nil
        }
        return [UInt8](data)
    }
}
