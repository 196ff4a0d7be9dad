#!/usr/bin/env python3
"""Build data/sample/wiki-sample.xml.bz2: a small MediaWiki dump for the demo and the tests.

    python3 scripts/build-wiki-sample.py data/sample/wiki-sample.xml.bz2

The articles are short texts written for this project (CC0), marked up the way Wikipedia articles
are: infoboxes with nested templates, <ref>s, tables, lists, files, categories, interlanguage links,
comments, entities. Around them: a redirect, a talk page, a template and a category page, which
wiki-extract must skip. Written as a multistream bzip2 file (the siteinfo header in its own stream,
then streams of 4 pages), the layout of Wikimedia's *-multistream.xml.bz2. Deterministic; stdlib only.
"""
import bz2
import sys
from xml.sax.saxutils import escape

HEADER = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="0.10" xml:lang="en">
  <siteinfo>
    <sitename>Samplepedia</sitename>
    <dbname>samplewiki</dbname>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <generator>scripts/build-wiki-sample.py</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="1" case="first-letter">Talk</namespace>
      <namespace key="10" case="first-letter">Template</namespace>
      <namespace key="14" case="first-letter">Category</namespace>
    </namespaces>
  </siteinfo>
"""
FOOTER = "</mediawiki>\n"

# (title, ns, wikitext, redirect target or None)
PAGES = [
    ("Lighthouse", 0, """{{Short description|Tower that guides ships at night}}
{{Infobox structure
| name = Lighthouse
| image = Lighthouse at dusk.jpg
| caption = A lighthouse {{nowrap|at dusk}}
| height = {{convert|30|m|ft}}
}}
A '''lighthouse''' is a tower with a bright lamp at the top that helps ships find their way near a
[[coast]] at night or in fog.<ref>{{cite book |title=Lights of the Coast |year=1998}}</ref> Each light
has its own pattern of flashes, so that sailors can tell one from another.<ref name="flash" />

== History ==
Early lighthouses were simple fires burning on hilltops. Later towers used oil lamps and, from the
19th century, large glass [[Lens (optics)|lenses]] that bend the light into a narrow beam.
[[File:Fresnel lens.jpg|thumb|A glass lens made of many rings, used to make the beam [[brightness|brighter]]]]

== Keepers ==
Until automation, a keeper lived at the station. Their work included:
* trimming the lamp wick every few hours
* cleaning the lens and the windows
* writing the weather in a ''log book''

== See also ==
* [[Lightship]]
* [[Buoy]]

== References ==
{{Reflist}}

[[Category:Towers]]
[[Category:Navigation]]
[[de:Leuchtturm]]
[[fr:Phare]]""", None),
    ("Bicycle", 0, """{{Use dmy dates|date=March 2024}}
A '''bicycle''', or '''bike''', is a vehicle with two wheels, one behind the other, driven by pedals that
turn a chain.<ref>Simple machines, p. 12.</ref> It is one of the most efficient ways for a person to travel
on land.<!-- efficiency claim: add a source -->

== Parts ==
{| class="wikitable"
|+ Main parts
! Part !! Purpose
|-
| Frame || holds the other parts together
|-
| Chain || carries force from the pedals to the rear wheel {{efn|Some bicycles use a belt instead.}}
|}
The main parts are the frame, two wheels, the handlebars, the saddle, the pedals and the chain.

== Uses ==
People ride bicycles to work, for sport and for fun. In many cities there are special lanes for them
&ndash; the [[Netherlands]] has more bicycles than people.

[[Category:Vehicles]]
[[es:Bicicleta]]""", None),
    ("Bike", 0, "#REDIRECT [[Bicycle]]\n\n{{R from short name}}", "Bicycle"),
    ("Honey bee", 0, """{{Taxobox
| name = Honey bee
| regnum = [[Animal]]ia
| genus = ''Apis''
}}
'''Honey bees''' are flying insects that live in large groups called colonies and make
[[honey]] from the [[nectar]] of flowers.<ref name="bees">{{cite journal |title=Life of the Hive |journal=Insects |volume=4}}</ref>

== Colony ==
A colony has three kinds of bees:
# one '''queen''', who lays the eggs;
# many '''workers''', who collect food and care for the young;
# some '''drones''', whose only job is to mate with a queen.
Workers tell each other where flowers are by a ''waggle dance''.<ref name="bees" />

== Honey ==
Bees store honey in cells made of [[beeswax|wax]]. A strong colony can make more than
{{convert|25|kg|lb}} of honey in a good year, far more than it needs for the winter.

{{Insects-stub}}
[[Category:Bees]]""", None),
    ("Talk:Honey bee", 1, """== Waggle dance ==
Should the article say more about the dance? ~~~~""", None),
    ("Volcano", 0, """{{About|the landform|the film|Volcano (film)}}
A '''volcano''' is an opening in the ground through which hot melted rock, called ''magma'', ash and
gases escape from inside the [[Earth]].<ref>{{cite web |url=https://example.org/volcanoes |title=Volcanoes}}</ref>
When magma reaches the surface it is called '''lava'''.

== Kinds ==
; Shield volcanoes : wide, gentle slopes built from runny lava
; Stratovolcanoes : steep cones of lava and ash layers
; Cinder cones : small hills of loose rock

== Famous eruptions ==
{| class="wikitable sortable"
! Year !! Volcano
|-
| 79 || [[Mount Vesuvius]]
|-
| 1883 || [[Krakatoa]]
|}
The eruption of [[Mount Vesuvius]] in 79 buried the Roman towns of [[Pompeii]] and [[Herculaneum]].
[[Image:Eruption.png|left|200px|Lava flowing into the sea]]

__NOTOC__
[[Category:Landforms]]
[[it:Vulcano]]""", None),
    ("Template:Convert", 10, """<includeonly>{{{1}}} {{{2}}}</includeonly><noinclude>
Converts units. {{Documentation}}
</noinclude>""", None),
    ("Tea", 0, """'''Tea''' is a drink made by pouring hot water over the dried leaves of the tea plant,
''Camellia sinensis''.<ref>Plants of Asia, ch. 3.</ref> After water, it is one of the most common drinks
in the world.

== Kinds ==
The same leaves give different teas depending on how they are processed:
* '''Green tea''' &ndash; leaves are heated soon after picking, so they stay green.
* '''Black tea''' &ndash; leaves are left to darken in the air before drying.
* '''Oolong''' &ndash; somewhere in between.

== Preparation ==
Black tea is usually steeped for three to five minutes in water just off the boil (about
100&nbsp;°C); green tea prefers cooler water, around 80&nbsp;°C.<ref group="note">Times vary by taste.</ref>

[[Category:Drinks]]
[[ja:茶]]""", None),
    ("Chess", 0, """{{Infobox game
| title = Chess
| players = 2
| setup_time = {{#if:{{{setup|}}}|{{{setup}}}|under one minute}}
}}
'''Chess''' is a board game for two players. Each player starts with sixteen pieces on a board of
8&times;8 squares, and tries to ''checkmate'' the other player's [[King (chess)|king]], that is, to
attack it so that it cannot escape.<ref>{{Harvnb|Author|2001|p=5}}</ref>

== Pieces ==
{| class="wikitable"
! Piece !! Number !! Moves
|-
| [[King (chess)|King]] || 1 || one square in any direction
|-
| [[Queen (chess)|Queen]] || 1 || any number of squares in a straight line
|-
| [[Pawn (chess)|Pawn]] || 8 || forward one square, captures diagonally
|}
The [[knight (chess)|knight]] is the only piece that can jump over others.

== Notation ==
Moves are written in a short form: for example, <code>e4</code> means a pawn moves to the square e4, and
<code>Nf3</code> means a knight moves to f3. Comparisons such as 3 &lt; 5 are written with entities in the
source.

[[Category:Board games]]
[[ru:Шахматы]]""", None),
    ("Category:Board games", 14, "Games played on a board. {{Commons category|Board games}}", None),
    ("Moon", 0, """{{Good article}}
The '''Moon''' is the natural [[satellite]] that orbits the [[Earth]]. It is about a quarter as wide
as the Earth and takes about 27 days to go around it once.<ref name=orbit>Sky Almanac, 2010.</ref>

== Phases ==
As the Moon moves around the Earth, the part of it lit by the [[Sun]] that we can see changes. These
changes are called ''phases'': new moon, first quarter, full moon and last quarter.<ref name=orbit/>

== Exploration ==
People first walked on the Moon in 1969.{{citation needed|date=May 2020}} Twelve people have walked
on its surface.

[[Category:Moons]]
[[simple:Moon]]
[[zh-yue:月球]]""", None),
    ("Paper", 0, """'''Paper''' is a thin material made from plant fibres, mostly from [[wood]], pressed together and
dried. It is used for writing, printing, packing and cleaning.<ref>How Paper Is Made (booklet).</ref>

== Making paper ==
# Wood is cut into chips and cooked into a wet pulp.
# The pulp is spread on a moving screen, and the water drains away.
# Rollers press and dry the sheet.

Recycled paper skips the first step: old paper is soaked and turned back into pulp. See also
[[:Category:Paper]] and [http://example.org/paper-history a short history].

[[Category:Materials]]""", None),
    ("Compass", 0, """A '''compass''' is a tool that shows directions. Its needle is a small [[magnet]] that turns to
point towards the Earth's magnetic north.<ref>{{cite book|title=Finding North|year=1987}}</ref>

The four main directions are north, east, south and west.{{sfn|Finding North|1987|p=3}} Between them
lie north-east, south-east, south-west and north-west.

<gallery>
Compass rose.png|A compass rose
Old compass.jpg|An old ship's compass
</gallery>

[[Category:Navigation]]""", None),
    ("River", 0, """A '''river''' is a natural stream of fresh water that flows towards an [[ocean]], a [[lake]] or
another river.<ref>Water on Land, p. 40.</ref> Small rivers may be called ''streams'', ''creeks'' or
''brooks''.

== Parts of a river ==
* The '''source''' is where the river starts, often a spring or melting snow in the mountains.
* The '''mouth''' is where it ends.
* A '''tributary''' is a smaller river that joins a larger one.

The longest rivers include the [[Nile]] and the [[Amazon River|Amazon]].

[[Category:Rivers]]
[[pt:Rio]]""", None),
]


def page_xml(page_id, title, ns, text, redirect):
    red = '    <redirect title="%s" />\n' % escape(redirect, {'"': "&quot;"}) if redirect else ""
    return ("  <page>\n    <title>%s</title>\n    <ns>%d</ns>\n    <id>%d</id>\n%s    <revision>\n"
            "      <id>%d</id>\n      <parentid>%d</parentid>\n      <timestamp>2024-05-01T12:00:00Z</timestamp>\n"
            "      <contributor>\n        <username>Sample</username>\n        <id>1</id>\n      </contributor>\n"
            "      <comment>sample page</comment>\n      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
            '      <text bytes="%d" xml:space="preserve">%s</text>\n      <sha1>none</sha1>\n    </revision>\n  </page>\n'
            % (escape(title), ns, page_id, red, 1000 + page_id, 999 + page_id, len(text.encode()), escape(text)))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: build-wiki-sample.py OUT.xml.bz2")
    pages = [page_xml(10 + i, t, ns, text, red) for i, (t, ns, text, red) in enumerate(PAGES)]
    streams = [HEADER] + ["".join(pages[i:i + 4]) for i in range(0, len(pages), 4)] + [FOOTER]
    with open(sys.argv[1], "wb") as f:
        for s in streams:
            f.write(bz2.compress(s.encode(), 9))


if __name__ == "__main__":
    main()
