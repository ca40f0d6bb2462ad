# Writes a C file defining NAME as the bytes of IN, NUL-terminated (the report's HTML template).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
file(WRITE ${OUT} "/* Generated from ${IN} by cmake/embed.cmake. */\nconst char ${NAME}[] = {${hex}0};\n")
