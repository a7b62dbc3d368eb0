"""pykka actors, one concern each: commands in, events out."""
