import Playback
import Synchronization

/// Loads the daemon's SoundFont once and hands the same one to every song.
///
/// The start-up `soundfont` step calls `load(path:)` early (off the critical path); a play
/// request that comes first simply awaits the same load instead of starting a second one.
public final class SoundFontCache: Sendable {
    private let loading = Mutex<(path: String, task: Task<SoundFont, any Error>)?>(nil)
    private let defaultPath: String

    public init(defaultPath: String = SoundFont.defaultPath) {
        self.defaultPath = defaultPath
    }

    /// The SoundFont at `path` (default: the configured one), loading it on first use. A failed
    /// load is forgotten, so the next request tries again (the file may have been installed since).
    public func load(path: String? = nil) async throws -> SoundFont {
        let path = path ?? loading.withLock { $0?.path } ?? defaultPath
        let task = loading.withLock { current -> Task<SoundFont, any Error> in
            if let current, current.path == path { return current.task }
            let task = Task { () throws -> SoundFont in try await SoundFont.load(path: path) }
            current = (path, task)
            return task
        }
        do {
            return try await task.value
        } catch {
            loading.withLock { current in
                if current?.path == path { current = nil }
            }
            throw error
        }
    }
}
