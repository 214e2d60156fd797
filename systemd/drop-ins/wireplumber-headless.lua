-- WirePlumber 0.4 on a box nobody logs in at (no session active on seat0): without this its
-- BlueZ monitor follows logind's seat and stays off, so a speaker connects and no sink appears.
-- Install as /etc/wireplumber/bluetooth.lua.d/51-speakerd.lua, then restart wireplumber
-- (systemctl --user restart wireplumber as the session's user). composer-cli doctor checks it.
bluez_monitor.properties["with-logind"] = false
