--[[
  Append events to a run's replay log and publish them, in order (see
  includes/append-event.lua): one script, so several events of one writer (a step's completion
  and the run's) cost one round trip.

  Input:
    KEYS[1]  the run's log (list; index i holds seq i + 1)
    KEYS[2]  the run's appends (hash): append id -> the seq of that append's last event

    ARGV[1]  the run's live pub/sub channel
    ARGV[2]  expiry in seconds of both keys, renewed on every append
    ARGV[3]  the run's run.started event, JSON-encoded, pushed first when the log is empty;
             '' for none
    ARGV[4]  this append's id ('' for none): one already in KEYS[2] changes nothing
    ARGV[5..] the events, each JSON-encoded (none: only open the log)

  Returns:
    the sequence number of the last event in the log (1 for a run's first event); for an
    append that already ran, that append's

  Events:
    PUBLISH ARGV[1] '{"seq":<seq>,"at":<ms>,"event":<event>}' per event appended
]]
--- @include "includes/append-event"
local done = appendedBefore(KEYS[2])
if done then return done end
beginAppend()
for i = 5, #ARGV do push(ARGV[i]) end
return endAppend(KEYS[2])
