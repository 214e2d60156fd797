import SpeakerCore
print("composer-cli \(SpeakerCore.version)")
