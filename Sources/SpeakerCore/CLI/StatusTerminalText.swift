extension StatusReport {
    /// `humanReadable` with the status line told by the playback record when the two disagree.
    ///
    /// speakerd's status sentence (systemd's STATUS=, from its DaemonPhase) knows no pause: a
    /// paused song still reads "Playing X on Y". The playback record does know, so a terminal shows
    /// "Paused X on Y" instead. When the daemon's sentence learns to say so, this changes nothing.
    public var terminalText: String {
        var report = self
        report.message = statusSentence
        return report.humanReadable
    }

    /// The daemon's sentence, with "Playing" turned into "Paused" while the song is paused.
    public var statusSentence: String {
        let playing = "Playing "
        guard playback.state == "paused", message.hasPrefix(playing) else { return message }
        return "Paused " + message.dropFirst(playing.count)
    }
}
