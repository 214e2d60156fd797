import SpeakerCore
print("speakerd \(SpeakerCore.version)")
