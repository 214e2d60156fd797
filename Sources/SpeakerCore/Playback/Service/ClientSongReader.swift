import Foundation
import SystemPackage

/// Reads a song from the descriptor a client sent with `play`, then closes it.
///
/// The daemon never opens client paths: the client opens the file with its own permissions and
/// passes the descriptor over D-Bus. The read runs on a thread of its own, not the cooperative
/// pool, because a descriptor may be a pipe that blocks (a client streaming `cat song.mid |`);
/// the size limit still ends an endless one. The descriptor is closed whatever happens, so a
/// failed request never leaks one.
enum ClientSongReader {
    static func read(_ request: PlayRequest, limits: MIDIReadLimits) async throws(PlaybackServiceError) -> MIDISong {
        let name = request.displayName
        let descriptor = request.file
        let result: Result<MIDISong, MIDIFileError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                let outcome = Result { () throws(MIDIFileError) in
                    try MIDIFileReader.read(from: descriptor, name: name, limits: limits)
                }
                try? descriptor.close()
                continuation.resume(returning: outcome)
            }
            thread.name = "play-request-read"
            thread.start()
        }
        switch result {
        case let .success(song):
            return song
        case let .failure(error):
            throw .invalidSong(file: name, reason: error.description)
        }
    }
}
