"""Prints the text an independent reader finds in a rendered producible.

Usage: read_producible.py FORMAT PATH. docx, pptx and xlsx are read with python-docx,
python-pptx and openpyxl (`docx-pictures` and `pptx-pictures` print the pixel size of each
picture instead); html with the standard library's HTML parser; csv with its csv
reader. (pdf and svg are read by pdftotext and rsvg-convert, from the test itself.)
"""

import csv
import sys
from html.parser import HTMLParser


def docx_text(path):
    import docx

    document = docx.Document(path)
    out = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            out.extend(cell.text for cell in row.cells)
    return out


def pptx_text(path):
    import pptx

    out = []
    for slide in pptx.Presentation(path).slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                out.extend(p.text for p in shape.text_frame.paragraphs)
    return out


def xlsx_text(path):
    import openpyxl

    out = []
    for sheet in openpyxl.load_workbook(path, read_only=True).worksheets:
        for row in sheet.iter_rows(values_only=True):
            out.extend(str(v) for v in row if v is not None)
    return out


class Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.out = []
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.out.append(dict(attrs).get("alt", ""))

    def handle_data(self, data):
        if "style" not in self.tags[-1:]:
            self.out.append(data)


def html_text(path):
    parser = Text()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return ["".join(parser.out)]


def csv_text(path):
    with open(path, newline="", encoding="utf-8") as f:
        return [cell for row in csv.reader(f) for cell in row]


def docx_pictures(path):
    import docx

    document = docx.Document(path)
    out = []
    for shape in document.inline_shapes:
        rid = shape._inline.graphic.graphicData.pic.blipFill.blip.embed
        image = document.part.related_parts[rid].image
        out.append(f"{image.px_width}x{image.px_height}")
    return out


def pptx_pictures(path):
    import pptx
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    out = []
    for slide in pptx.Presentation(path).slides:
        for shape in slide.shapes:
            if shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
                width, height = shape.image.size
                out.append(f"{width}x{height}")
    return out


READERS = {
    "docx-pictures": docx_pictures,
    "pptx-pictures": pptx_pictures,"docx": docx_text, "pptx": pptx_text, "xlsx": xlsx_text, "html": html_text, "csv": csv_text}

if __name__ == "__main__":
    print("\n".join(READERS[sys.argv[1]](sys.argv[2])))
